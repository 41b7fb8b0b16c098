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

    /** A new row holding {@code row}'s versions (none if null) plus this one, replacing one at the same position. */
    static byte[] with(byte[] row, long validFrom, long lsn, int ordinal, byte[] body) {
        if (row == null) {
            return build(new long[]{validFrom}, new long[]{lsn}, new int[]{ordinal}, new byte[][]{body});
        }
        int n = count(row);
        int at = indexOf(row, validFrom, lsn, ordinal);
        boolean replace = at >= 0;
        int pos = replace ? at : -at - 1;
        int m = replace ? n : n + 1;
        long[] vf = new long[m];
        long[] ls = new long[m];
        int[] ord = new int[m];
        byte[][] bodies = new byte[m][];
        for (int i = 0, j = 0; i < m; i++) {
            if (i == pos) {
                vf[i] = validFrom;
                ls[i] = lsn;
                ord[i] = ordinal;
                bodies[i] = body;
                if (replace) {
                    j++;
                }
            } else {
                vf[i] = validFrom(row, j);
                ls[i] = lsn(row, j);
                ord[i] = ordinal(row, j);
                bodies[i] = body(row, j);
                j++;
            }
        }
        return build(vf, ls, ord, bodies);
    }

    /** A new row without the versions {@code [0, drop)}, or null if none would remain. */
    static byte[] withoutFirst(byte[] row, int drop) {
        int n = count(row);
        int m = n - drop;
        if (m <= 0) {
            return null;
        }
        long[] vf = new long[m];
        long[] ls = new long[m];
        int[] ord = new int[m];
        byte[][] bodies = new byte[m][];
        for (int i = 0; i < m; i++) {
            vf[i] = validFrom(row, i + drop);
            ls[i] = lsn(row, i + drop);
            ord[i] = ordinal(row, i + drop);
            bodies[i] = body(row, i + drop);
        }
        return build(vf, ls, ord, bodies);
    }

    static byte[] body(byte[] row, int i) {
        return java.util.Arrays.copyOfRange(row, bodyStart(row, i), bodyEnd(row, i));
    }

    private static byte[] build(long[] vf, long[] ls, int[] ord, byte[][] bodies) {
        int n = vf.length;
        int size = HEAD + n * ENTRY;
        for (byte[] b : bodies) {
            size += b.length;
        }
        byte[] out = new byte[size];
        INT.set(out, 0, n);
        int end = HEAD + n * ENTRY;
        for (int i = 0; i < n; i++) {
            int p = HEAD + i * ENTRY;
            System.arraycopy(bodies[i], 0, out, end, bodies[i].length);
            end += bodies[i].length;
            LONG.set(out, p, vf[i]);
            LONG.set(out, p + 8, ls[i]);
            INT.set(out, p + 16, ord[i]);
            INT.set(out, p + 20, end);
        }
        return out;
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
