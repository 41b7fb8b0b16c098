package io.asofconnect.common.lookup;

/**
 * What a lookup found. Every outcome is explicit, so a caller can never mistake "not replicated yet"
 * or "older than the history we keep" for "no such row".
 */
public sealed interface LookupResult {

    /** The row as it was: {@code version.row()} is never null here. */
    record Found(Version version) implements LookupResult {
        public Found {
            if (version.isTombstone()) {
                throw new IllegalArgumentException("a tombstone is Absent, not Found");
            }
        }
    }

    /**
     * No row was valid then: the key had no version yet, or its version then was a tombstone
     * ({@code tombstone} is that version, or null when the key had none).
     */
    record Absent(Version tombstone) implements LookupResult {
    }

    /**
     * The time asked for lies before the history the replica holds ({@code historyStart}, epoch
     * millis): it was pruned by retention, or the replica was rebuilt after it. Answering would risk a
     * wrong row, so no answer is given.
     */
    record OutOfHistory(long historyStart) implements LookupResult {
    }

    /**
     * The time asked for is past the replica's watermark: changes committed up to then may not have
     * arrived yet, so an answer now might differ from an answer after a replay.
     */
    record NotYetVisible(long watermark) implements LookupResult {
    }

    /** The table is not one the replica captures. */
    record UnknownTable(String table) implements LookupResult {
    }

    /** A shared instance for "no version at all". */
    Absent NO_VERSION = new Absent(null);
}
