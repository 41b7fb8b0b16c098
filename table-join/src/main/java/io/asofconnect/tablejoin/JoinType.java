package io.asofconnect.tablejoin;

/** Which rows of the view's two tables come out. */
public enum JoinType {
    /** A row per pair of matching left and right rows. */
    INNER,
    /**
     * As INNER, plus a row per left row without a match, its right columns null. Allowed only when each left row
     * matches at most one right row (the right join columns are the right table's primary key), so that the view key
     * is the left row's key and never has a null column.
     */
    LEFT
}
