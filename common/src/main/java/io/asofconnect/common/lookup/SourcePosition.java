package io.asofconnect.common.lookup;

/**
 * Where in the source's change stream a version was produced: the change's LSN and, for the rare
 * events that share one LSN (a snapshot row, the delete and create of a primary-key update), an ordinal.
 *
 * <p>Positions order the versions of one key that share a valid-from instant: the later change wins.
 * For Postgres this order is the commit order for any one row, since a row is locked by the
 * transaction that changes it until that transaction ends. Re-applying a change at the same position
 * replaces, never duplicates: this is how replays from the engine are absorbed.
 */
public record SourcePosition(long lsn, int ordinal) implements Comparable<SourcePosition> {
    /** Sorts before every real position. */
    public static final SourcePosition MIN = new SourcePosition(Long.MIN_VALUE, Integer.MIN_VALUE);
    /** Sorts after every real position. */
    public static final SourcePosition MAX = new SourcePosition(Long.MAX_VALUE, Integer.MAX_VALUE);

    @Override
    public int compareTo(SourcePosition o) {
        // Postgres LSNs stay far below 2^63, so signed order is their order and MIN/MAX stay sentinels.
        int c = Long.compare(lsn, o.lsn);
        return c != 0 ? c : Integer.compare(ordinal, o.ordinal);
    }

    /** Postgres' text form of the LSN ({@code 16/B374D848}), then the ordinal when it is not 0. */
    @Override
    public String toString() {
        String l = Long.toHexString(lsn >>> 32).toUpperCase() + "/" + Long.toHexString(lsn & 0xFFFFFFFFL).toUpperCase();
        return ordinal == 0 ? l : l + "#" + ordinal;
    }

    /** Parses {@link #toString()}'s form, or a bare LSN such as {@code 0/16B3748}. */
    public static SourcePosition parse(String text) {
        String s = text.trim();
        int ordinal = 0;
        int hash = s.indexOf('#');
        if (hash >= 0) {
            ordinal = Integer.parseInt(s.substring(hash + 1));
            s = s.substring(0, hash);
        }
        int slash = s.indexOf('/');
        if (slash < 0) {
            throw new IllegalArgumentException("not an LSN: expected the form 16/B374D848");
        }
        long hi = Long.parseLong(s.substring(0, slash), 16);
        long lo = Long.parseLong(s.substring(slash + 1), 16);
        return new SourcePosition((hi << 32) | lo, ordinal);
    }
}
