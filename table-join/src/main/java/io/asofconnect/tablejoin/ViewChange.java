package io.asofconnect.tablejoin;

import org.apache.kafka.connect.data.Struct;

/**
 * One change of one view row, found for {@code candidate} (the other table's row that was probed, or null when the
 * change needed no probe) in {@code phase} of its source change: see {@link DeltaJoin}.
 *
 * @param before the row before the change, null for an insert
 * @param after  the row after it, null for a delete
 */
public record ViewChange(Kind kind, Struct key, Struct before, Struct after, int phase, byte[] candidate) {

    public enum Kind { INSERT, UPDATE, DELETE }
}
