package io.asofconnect.store;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * One row's whole history in one immutable byte array, so that a lookup is one map get and a binary
 * search over longs read straight from the array, and only the version it returns is decoded.
 *
 * <p>Layout: {@code count(4)}, then {@code count} header entries of {@value #ENTRY} bytes
 * ({@code validFrom(8) lsn(8) ordinal(4) bodyEnd(4)}) sorted by (valid-from, lsn, ordinal), then the
 * bodies ({@link VersionCodec}) in the same order; body {@code i} spans from the previous entry's
 * {@code bodyEnd} (or the end of the header) to its own. Arrays are never modified once published:
 * every change builds a new one (copy on write), so readers need no lock.
 */
final class PackedRow {
    static final int ENTRY = 24;
    private static final int HEAD = 4;
    private static final VarHandle LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle INT = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);

    private PackedRow() {
    }

    static int count(byte[] row) {
        return (int) INT.get(row, 0);
    }

    static long validFrom(byte[] row, int i) {
        return (long) LONG.get(row, HEAD + i * ENTRY);
    }

    static long lsn(byte[] row, int i) {
        return (long) LONG.get(row, HEAD + i * ENTRY + 8);
    }

    static int ordinal(byte[] row, int i) {
        return (int) INT.get(row, HEAD + i * ENTRY + 16);
    }

    static int bodyStart(byte[] row, int i) {
        return i == 0 ? HEAD + count(row) * ENTRY : bodyEnd(row, i - 1);
    }

    static int bodyEnd(byte[] row, int i) {
        return (int) INT.get(row, HEAD + i * ENTRY + 20);
    }

    /** The index of the last version whose valid-from is at or before {@code timestamp}, or -1. */
    static int floor(byte[] row, long timestamp) {
        int lo = 0;
        int hi = count(row) - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (validFrom(row, mid) <= timestamp) {
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

    /**
     * A new row holding {@code row}'s versions (none if null) plus this one, replacing one at the same
     * position. Header entries and bodies move in bulk (two or three array copies), so a put costs the
     * row's size in bytes, not one allocation per version.
     */
    static byte[] with(byte[] row, long validFrom, long lsn, int ordinal, byte[] body) {
        if (row == null) {
            byte[] out = new byte[HEAD + ENTRY + body.length];
            INT.set(out, 0, 1);
            setEntry(out, 0, validFrom, lsn, ordinal, out.length);
            System.arraycopy(body, 0, out, HEAD + ENTRY, body.length);
            return out;
        }
        int n = count(row);
        int at = indexOf(row, validFrom, lsn, ordinal);
        boolean replace = at >= 0;
        int pos = replace ? at : -at - 1;
        int m = replace ? n : n + 1;
        int oldHead = HEAD + n * ENTRY;
        int newHead = HEAD + m * ENTRY;
        int cut = oldStart(row, pos);
        int resume = replace ? bodyEnd(row, pos) : cut;
        byte[] out = new byte[row.length - (resume - cut) + body.length + (newHead - oldHead)];
        INT.set(out, 0, m);
        // Entries and bodies before the new version move by the header's growth...
        System.arraycopy(row, HEAD, out, HEAD, pos * ENTRY);
        shiftEnds(out, 0, pos, newHead - oldHead);
        System.arraycopy(row, oldHead, out, newHead, cut - oldHead);
        int newStart = newHead + cut - oldHead;
        System.arraycopy(body, 0, out, newStart, body.length);
        setEntry(out, pos, validFrom, lsn, ordinal, newStart + body.length);
        // ...and those after it also by the new body's size less the one it replaced.
        int after = n - (replace ? pos + 1 : pos);
        int from = replace ? pos + 1 : pos;
        System.arraycopy(row, HEAD + from * ENTRY, out, HEAD + (pos + 1) * ENTRY, after * ENTRY);
        shiftEnds(out, pos + 1, pos + 1 + after, newStart + body.length - resume);
        System.arraycopy(row, resume, out, newStart + body.length, row.length - resume);
        return out;
    }

    /** A new row without the versions {@code [0, drop)}, or null if none would remain. */
    static byte[] withoutFirst(byte[] row, int drop) {
        int n = count(row);
        int m = n - drop;
        if (m <= 0) {
            return null;
        }
        int newHead = HEAD + m * ENTRY;
        int keepFrom = oldStart(row, drop);
        byte[] out = new byte[newHead + row.length - keepFrom];
        INT.set(out, 0, m);
        System.arraycopy(row, HEAD + drop * ENTRY, out, HEAD, m * ENTRY);
        shiftEnds(out, 0, m, newHead - keepFrom);
        System.arraycopy(row, keepFrom, out, newHead, row.length - keepFrom);
        return out;
    }

    /** Where body {@code i} starts, for {@code i} in {@code [0, count]} ({@code count}: the array's end). */
    private static int oldStart(byte[] row, int i) {
        return i == 0 ? HEAD + count(row) * ENTRY : bodyEnd(row, i - 1);
    }

    private static void shiftEnds(byte[] out, int from, int to, int by) {
        for (int i = from; i < to; i++) {
            int p = HEAD + i * ENTRY + 20;
            INT.set(out, p, (int) INT.get(out, p) + by);
        }
    }

    private static void setEntry(byte[] out, int i, long validFrom, long lsn, int ordinal, int bodyEnd) {
        int p = HEAD + i * ENTRY;
        LONG.set(out, p, validFrom);
        LONG.set(out, p + 8, lsn);
        INT.set(out, p + 16, ordinal);
        INT.set(out, p + 20, bodyEnd);
    }

    /**
     * Checks that a row read from a checkpoint is well formed: a sane count, versions in strictly
     * increasing order, bodies inside the array and ending exactly at its end. Bodies themselves are
     * decoded only when read ({@link VersionCodec}), like every other read of them.
     */
    static void check(byte[] row) {
        if (row.length < HEAD) {
            throw new MalformedEncodingException("packed row shorter than its count");
        }
        int n = count(row);
        if (n <= 0 || (long) HEAD + (long) n * ENTRY > row.length) {
            throw new MalformedEncodingException("packed row count " + n + " does not fit " + row.length + " bytes");
        }
        int prevEnd = HEAD + n * ENTRY;
        for (int i = 0; i < n; i++) {
            int end = bodyEnd(row, i);
            if (end <= prevEnd || end > row.length) {
                throw new MalformedEncodingException("packed row body " + i + " out of bounds");
            }
            if (i > 0 && compare(row, i - 1, validFrom(row, i), lsn(row, i), ordinal(row, i)) >= 0) {
                throw new MalformedEncodingException("packed row versions out of order at " + i);
            }
            prevEnd = end;
        }
        if (prevEnd != row.length) {
            throw new MalformedEncodingException("trailing bytes after the packed row's last body");
        }
    }
}
