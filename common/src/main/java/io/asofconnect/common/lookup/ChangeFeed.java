package io.asofconnect.common.lookup;

import java.util.List;
import java.util.Optional;

/**
 * What an incrementally maintained view asks of a replica, beyond {@link VersionLookup}: the changes of its
 * tables in one total order ({@link Change}), each row as of any point of that order, and the rows whose
 * secondary-index value is a given one.
 *
 * <p>Only tables the replica was told to feed ({@code replica.feed.tables}) are in the feed, and only
 * declared indexes ({@code replica.indexes}) can be probed. Everything answered is committed in the replica's
 * store; a caller reads the feed only up to the {@linkplain Watermark#get() watermark}, behind which it is
 * complete and never changes (until retention prunes it: {@link #historyStart()}).
 *
 * <p>Implementations are safe for concurrent use.
 */
public interface ChangeFeed {

    /**
     * At most {@code limit} changes after {@code after} (exclusive; {@link Change#START} for the beginning)
     * whose valid-from is at or before {@code upTo}, in feed order.
     */
    List<Change> changesAfter(Change after, long upTo, int limit);

    /**
     * The version of {@code table}'s row {@code key} that is current just before {@code at} in the feed order:
     * the greatest version that sorts before {@code at} as a {@link Change} of that table and key would.
     * Empty when the row had no version then (a tombstone is returned as one: the caller reads it as absent).
     */
    Optional<Version> before(String table, RowKey key, Change at);

    /**
     * At most {@code limit} keys of {@code table}, in key order and after {@code afterKey} (exclusive; null for
     * the first), whose rows had {@code value} in the declared index on {@code columns} in some retained
     * version. A superset: the caller checks the row's version as of its point in the feed.
     *
     * @throws IllegalArgumentException when no such index is declared
     */
    List<RowKey> indexed(String table, List<String> columns, RowKey value, RowKey afterKey, int limit);

    /** Feed entries and versions before this instant are pruned; a reader behind it has lost history. */
    long historyStart();
}
