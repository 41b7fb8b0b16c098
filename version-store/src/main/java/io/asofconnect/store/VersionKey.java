package io.asofconnect.store;

import java.util.Arrays;

/**
 * The versions map's key (format 2): one byte array whose unsigned lexicographic order is the store's
 * order, so MapDB compares keys without decoding them and compresses a node's common prefix once.
 *
 * <p>{@code tableId(4) rowKey(n) validFrom(8) lsn(8) ordinal(4)}, numbers big-endian with the sign bit
 * flipped so that unsigned byte order is signed numeric order. The table id comes from the table
 * dictionary in the meta map. {@link io.asofconnect.lookup.RowKey#encoded()} is self-delimiting (a
 * count, then length-prefixed parts), so no row key's encoding is a proper prefix of another's: one
 * row's versions are contiguous, in (valid-from, position) order. The leading {@code tableId + rowKey}
 * bytes are the row's <em>prefix</em>.
 */
final class VersionKey {
    static final int TABLE_BYTES = 4;
    /** Bytes after the prefix: valid-from, lsn and ordinal. */
    static final int SUFFIX_BYTES = 20;

    private VersionKey() {
    }

    static byte[] of(int tableId, byte[] rowKey, long validFrom, long lsn, int ordinal) {
        byte[] k = new byte[TABLE_BYTES + rowKey.length + SUFFIX_BYTES];
        putInt(k, 0, tableId);
        System.arraycopy(rowKey, 0, k, TABLE_BYTES, rowKey.length);
        int p = TABLE_BYTES + rowKey.length;
        putLong(k, p, validFrom ^ Long.MIN_VALUE);
        putLong(k, p + 8, lsn ^ Long.MIN_VALUE);
        putInt(k, p + 16, ordinal ^ Integer.MIN_VALUE);
        return k;
    }

    /** Past every version of the row: the greatest key with this prefix. */
    static byte[] rowEnd(int tableId, byte[] rowKey) {
        byte[] k = new byte[TABLE_BYTES + rowKey.length + SUFFIX_BYTES];
        putInt(k, 0, tableId);
        System.arraycopy(rowKey, 0, k, TABLE_BYTES, rowKey.length);
        Arrays.fill(k, TABLE_BYTES + rowKey.length, k.length, (byte) 0xFF);
        return k;
    }

    /** Before every version of the row. */
    static byte[] rowStart(int tableId, byte[] rowKey) {
        byte[] k = new byte[TABLE_BYTES + rowKey.length];
        putInt(k, 0, tableId);
        System.arraycopy(rowKey, 0, k, TABLE_BYTES, rowKey.length);
        return k;
    }

    static byte[] tableStart(int tableId) {
        byte[] k = new byte[TABLE_BYTES];
        putInt(k, 0, tableId);
        return k;
    }

    /** Whether {@code key} is a version of the row whose prefix is the first {@code prefixLength} bytes of {@code probe}. */
    static boolean sameRow(byte[] key, byte[] probe, int prefixLength) {
        return key.length == prefixLength + SUFFIX_BYTES && Arrays.equals(key, 0, prefixLength, probe, 0, prefixLength);
    }

    static boolean sameRow(byte[] a, byte[] b) {
        return a.length == b.length && Arrays.equals(a, 0, a.length - SUFFIX_BYTES, b, 0, b.length - SUFFIX_BYTES);
    }

    static boolean inTable(byte[] key, int tableId) {
        return key.length >= TABLE_BYTES + SUFFIX_BYTES && getInt(key, 0) == tableId;
    }

    static byte[] rowKey(byte[] key) {
        return Arrays.copyOfRange(key, TABLE_BYTES, key.length - SUFFIX_BYTES);
    }

    static long validFrom(byte[] key) {
        return getLong(key, key.length - SUFFIX_BYTES) ^ Long.MIN_VALUE;
    }

    static long lsn(byte[] key) {
        return getLong(key, key.length - SUFFIX_BYTES + 8) ^ Long.MIN_VALUE;
    }

    static int ordinal(byte[] key) {
        return getInt(key, key.length - 4) ^ Integer.MIN_VALUE;
    }

    /** The same unsigned order MapDB's byte-array serializers use. */
    static int compare(byte[] a, byte[] b) {
        return Arrays.compareUnsigned(a, b);
    }

    private static void putInt(byte[] b, int p, int v) {
        b[p] = (byte) (v >>> 24);
        b[p + 1] = (byte) (v >>> 16);
        b[p + 2] = (byte) (v >>> 8);
        b[p + 3] = (byte) v;
    }

    private static void putLong(byte[] b, int p, long v) {
        putInt(b, p, (int) (v >>> 32));
        putInt(b, p + 4, (int) v);
    }

    private static int getInt(byte[] b, int p) {
        return ((b[p] & 0xFF) << 24) | ((b[p + 1] & 0xFF) << 16) | ((b[p + 2] & 0xFF) << 8) | (b[p + 3] & 0xFF);
    }

    private static long getLong(byte[] b, int p) {
        return ((long) getInt(b, p) << 32) | (getInt(b, p + 4) & 0xFFFFFFFFL);
    }
}
