package io.asofconnect.tablejoin;

/** How the view's changes are written to its topic: Flink's conversions of a dynamic table to a stream. */
public enum Encoding {
    /** Each record is a new view row; allowed only when the view can never update or delete a row. */
    APPEND,
    /** Keyed by the view key: the row as it is now, or a tombstone (null value) when it left the view. */
    UPSERT,
    /**
     * Keyed by the view key, each change as the rows it retracts and adds, with an op field holding Flink's
     * RowKind: {@code +I} insert, {@code -U} and {@code +U} the row before and after an update, {@code -D} delete.
     */
    RETRACT
}
