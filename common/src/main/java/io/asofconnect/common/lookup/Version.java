package io.asofconnect.common.lookup;

import org.apache.kafka.connect.data.Struct;

/**
 * One version of one row: valid from {@code validFrom} (epoch milliseconds, inclusive) until the next
 * version of the same key. {@code row} is {@code null} for a tombstone (the row was deleted).
 *
 * <p>The row keeps the shape (Connect schema) the table had when the version was written: a later
 * {@code ALTER TABLE} does not rewrite old versions.
 */
public record Version(long validFrom, SourcePosition position, Struct row) {
    /** Valid-from used for rows of the initial snapshot when they are taken to be valid since the beginning of time. */
    public static final long BEGINNING_OF_TIME = Long.MIN_VALUE;

    public static Version tombstone(long validFrom, SourcePosition position) {
        return new Version(validFrom, position, null);
    }

    public boolean isTombstone() {
        return row == null;
    }

    public VersionId id() {
        return new VersionId(validFrom, position);
    }

    /** Rows are data: this form names the version, never its values. */
    @Override
    public String toString() {
        return "Version{" + id() + (isTombstone() ? ", tombstone" : "") + "}";
    }
}
