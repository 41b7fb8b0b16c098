package io.asofconnect.store;

import io.asofconnect.common.data.MalformedEncodingException;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * One row's key and whole history in one immutable byte array, so that a lookup is one probe of its
 * table ({@link RowTable}) and a binary search over longs read straight from the array, and only the
 * version it returns is decoded.
 *
 * <p>Layout: {@code keyLength(4) key}, then the packed history: {@code count(4)}, {@code count} header
 * entries of {@value #ENTRY} bytes ({@code validFrom(8) lsn(8) ordinal(4) bodyEnd(4)}) sorted by
 * (valid-from, lsn, ordinal), then the bodies ({@link VersionCodec}) in the same order; body {@code i}
 * spans from the previous entry's {@code bodyEnd} (or the end of the header) to its own, both counted
 * from the start of the packed history. The packed history alone, {@code [keyEnd, length)}, is what a
 * checkpoint stores under the row's key. Arrays are never modified once published: every change builds
 * a new one (copy on write), so readers need no lock.
 */
final class PackedRow {
    static final int ENTRY = 24;
    /** Where the key starts, after its length. */
    static final int KEY_AT = 4;
    private static final int HEAD = 4;
    private static final VarHandle LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle INT = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);

    private PackedRow() {
    }

    /** Where the key ends and the packed history starts. */
    static int keyEnd(byte[] row) {
        return KEY_AT + (int) INT.get(row, 0);
    }

    /** A copy of the row's key. */
    static byte[] key(byte[] row) {
        return java.util.Arrays.copyOfRange(row, KEY_AT, keyEnd(row));
    }

    /** Orders rows by their keys, bytes compared unsigned. */
    static int compareKeys(byte[] a, byte[] b) {
        return java.util.Arrays.compareUnsigned(a, KEY_AT, keyEnd(a), b, KEY_AT, keyEnd(b));
    }

    /**
     * A row from a key and a packed history ({@code packed[from, to)}, as a checkpoint stores it), after
     * checking that the history is well formed ({@link #check}).
     */
    static byte[] keyed(byte[] key, int keyFrom, int keyTo, byte[] packed, int from, int to) {
        int keyLength = keyTo - keyFrom;
        byte[] row = new byte[KEY_AT + keyLength + to - from];
        INT.set(row, 0, keyLength);
        System.arraycopy(key, keyFrom, row, KEY_AT, keyLength);
        System.arraycopy(packed, from, row, KEY_AT + keyLength, to - from);
        check(row);
        return row;
    }

    static int count(byte[] row) {
        return (int) INT.get(row, keyEnd(row));
    }

    static long validFrom(byte[] row, int i) {
        return (long) LONG.get(row, keyEnd(row) + HEAD + i * ENTRY);
    }

    static long lsn(byte[] row, int i) {
        return (long) LONG.get(row, keyEnd(row) + HEAD + i * ENTRY + 8);
    }

    static int ordinal(byte[] row, int i) {
        return (int) INT.get(row, keyEnd(row) + HEAD + i * ENTRY + 16);
    }

    /** Where body {@code i} starts in the array. */
    static int bodyStart(byte[] row, int i) {
        int p = keyEnd(row);
        return p + start(row, p, i);
    }

    /** Where body {@code i} ends in the array. */
    static int bodyEnd(byte[] row, int i) {
        int p = keyEnd(row);
        return p + end(row, p, i);
    }

    /** Body {@code i}'s end, from the packed history's start {@code p}. */
    private static int end(byte[] row, int p, int i) {
        return (int) INT.get(row, p + HEAD + i * ENTRY + 20);
    }

    /** Body {@code i}'s start from {@code p}, for {@code i} in {@code [0, count]} ({@code count}: the history's end). */
    private static int start(byte[] row, int p, int i) {
        return i == 0 ? HEAD + (int) INT.get(row, p) * ENTRY : end(row, p, i - 1);
    }

    /** The index of the last version whose valid-from is at or before {@code timestamp}, or -1. */
    static int floor(byte[] row, long timestamp) {
        int at = keyEnd(row) + HEAD;
        int lo = 0;
        int hi = (int) INT.get(row, at - HEAD) - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if ((long) LONG.get(row, at + mid * ENTRY) <= timestamp) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return hi;
    }

    /** The index of the version at exactly this (valid-from, lsn, ordinal), or {@code -(insertion point) - 1}. */
    static int indexOf(byte[] row, long validFrom, long lsn, int ordinal) {
        int lo = 0;
        int hi = count(row) - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int c = compare(row, mid, validFrom, lsn, ordinal);
            if (c < 0) {
                lo = mid + 1;
            } else if (c > 0) {
                hi = mid - 1;
            } else {
                return mid;
            }
        }
        return -(lo + 1);
    }

    private static int compare(byte[] row, int i, long validFrom, long lsn, int ordinal) {
        int c = Long.compare(validFrom(row, i), validFrom);
        if (c == 0) {
            c = Long.compare(lsn(row, i), lsn);
        }
        return c == 0 ? Integer.compare(ordinal(row, i), ordinal) : c;
    }

    /** A new row of key {@code key} with this one version. */
    static byte[] first(byte[] key, long validFrom, long lsn, int ordinal, byte[] body) {
        int p = KEY_AT + key.length;
        byte[] out = new byte[p + HEAD + ENTRY + body.length];
        INT.set(out, 0, key.length);
        System.arraycopy(key, 0, out, KEY_AT, key.length);
        INT.set(out, p, 1);
        setEntry(out, p, 0, validFrom, lsn, ordinal, HEAD + ENTRY + body.length);
        System.arraycopy(body, 0, out, p + HEAD + ENTRY, body.length);
        return out;
    }

    /**
     * A new row holding {@code row}'s versions plus this one, replacing one at the same position. Header
     * entries and bodies move in bulk (a few array copies), so a put costs the row's size in bytes, not
     * one allocation per version.
     */
    static byte[] with(byte[] row, long validFrom, long lsn, int ordinal, byte[] body) {
        int p = keyEnd(row);
        int n = count(row);
        int at = indexOf(row, validFrom, lsn, ordinal);
        boolean replace = at >= 0;
        int pos = replace ? at : -at - 1;
        int m = replace ? n : n + 1;
        int oldHead = HEAD + n * ENTRY;
        int newHead = HEAD + m * ENTRY;
        int cut = start(row, p, pos);
        int resume = replace ? end(row, p, pos) : cut;
        byte[] out = new byte[row.length - (resume - cut) + body.length + (newHead - oldHead)];
        // The key and count, then the entries and bodies before the new version, which move by the header's growth...
        System.arraycopy(row, 0, out, 0, p);
        INT.set(out, p, m);
        System.arraycopy(row, p + HEAD, out, p + HEAD, pos * ENTRY);
        shiftEnds(out, p, 0, pos, newHead - oldHead);
        System.arraycopy(row, p + oldHead, out, p + newHead, cut - oldHead);
        int newStart = newHead + cut - oldHead;
        System.arraycopy(body, 0, out, p + newStart, body.length);
        setEntry(out, p, pos, validFrom, lsn, ordinal, newStart + body.length);
        // ...and those after it also by the new body's size less the one it replaced.
        int after = n - (replace ? pos + 1 : pos);
        int from = replace ? pos + 1 : pos;
        System.arraycopy(row, p + HEAD + from * ENTRY, out, p + HEAD + (pos + 1) * ENTRY, after * ENTRY);
        shiftEnds(out, p, pos + 1, pos + 1 + after, newStart + body.length - resume);
        System.arraycopy(row, p + resume, out, p + newStart + body.length, row.length - p - resume);
        return out;
    }

    /** A new row without the versions {@code [0, drop)}, or null if none would remain. */
    static byte[] withoutFirst(byte[] row, int drop) {
        int p = keyEnd(row);
        int n = count(row);
        int m = n - drop;
        if (m <= 0) {
            return null;
        }
        int newHead = HEAD + m * ENTRY;
        int keepFrom = start(row, p, drop);
        byte[] out = new byte[p + newHead + row.length - p - keepFrom];
        System.arraycopy(row, 0, out, 0, p);
        INT.set(out, p, m);
        System.arraycopy(row, p + HEAD + drop * ENTRY, out, p + HEAD, m * ENTRY);
        shiftEnds(out, p, 0, m, newHead - keepFrom);
        System.arraycopy(row, p + keepFrom, out, p + newHead, row.length - p - keepFrom);
        return out;
    }

    private static void shiftEnds(byte[] out, int p, int from, int to, int by) {
        for (int i = from; i < to; i++) {
            int at = p + HEAD + i * ENTRY + 20;
            INT.set(out, at, (int) INT.get(out, at) + by);
        }
    }

    private static void setEntry(byte[] out, int p, int i, long validFrom, long lsn, int ordinal, int bodyEnd) {
        int at = p + HEAD + i * ENTRY;
        LONG.set(out, at, validFrom);
        LONG.set(out, at + 8, lsn);
        INT.set(out, at + 16, ordinal);
        INT.set(out, at + 20, bodyEnd);
    }

    /**
     * Checks that a row is well formed: a key inside the array, a sane count, versions in strictly
     * increasing order, bodies inside the array and ending exactly at its end. Bodies themselves are
     * decoded only when read ({@link VersionCodec}), like every other read of them.
     */
    static void check(byte[] row) {
        if (row.length < KEY_AT || (int) INT.get(row, 0) < 0 || (long) KEY_AT + (int) INT.get(row, 0) + HEAD > row.length) {
            throw new MalformedEncodingException("packed row shorter than its key and count");
        }
        int p = keyEnd(row);
        int size = row.length - p;
        int n = count(row);
        if (n <= 0 || (long) HEAD + (long) n * ENTRY > size) {
            throw new MalformedEncodingException("packed row count " + n + " does not fit " + size + " bytes");
        }
        // Every open reads every row through here (a third of the load's time went to it when each field
        // was read through the accessors): one pass, each entry's fields read once, at absolute offsets.
        int prevEnd = HEAD + n * ENTRY;
        long prevValidFrom = 0;
        long prevLsn = 0;
        int prevOrdinal = 0;
        for (int i = 0, at = p + HEAD; i < n; i++, at += ENTRY) {
            long validFrom = (long) LONG.get(row, at);
            long lsn = (long) LONG.get(row, at + 8);
            int ordinal = (int) INT.get(row, at + 16);
            int e = (int) INT.get(row, at + 20);
            if (e <= prevEnd || e > size) {
                throw new MalformedEncodingException("packed row body " + i + " out of bounds");
            }
            if (i > 0 && (prevValidFrom > validFrom || prevValidFrom == validFrom
                    && (prevLsn > lsn || prevLsn == lsn && prevOrdinal >= ordinal))) {
                throw new MalformedEncodingException("packed row versions out of order at " + i);
            }
            prevEnd = e;
            prevValidFrom = validFrom;
            prevLsn = lsn;
            prevOrdinal = ordinal;
        }
        if (prevEnd != size) {
            throw new MalformedEncodingException("trailing bytes after the packed row's last body");
        }
    }
}
