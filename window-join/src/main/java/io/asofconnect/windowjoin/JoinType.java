package io.asofconnect.windowjoin;

import io.asofconnect.windowjoin.state.Side;

/** Which sides' unmatched records become rows, as in SQL. */
public enum JoinType {
    INNER, LEFT, RIGHT, FULL;

    /** Whether a record of {@code side} that never matched is written, with the other side's columns NULL. */
    public boolean keepsUnmatched(Side side) {
        return this == FULL || (side == Side.LEFT ? this == LEFT : this == RIGHT);
    }
}
