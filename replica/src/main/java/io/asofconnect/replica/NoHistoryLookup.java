package io.asofconnect.replica;

import io.asofconnect.common.lookup.Change;
import io.asofconnect.common.lookup.ChangeFeed;
import io.asofconnect.common.lookup.IndexDeclaration;
import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.common.lookup.Watermark;

import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The answers of a store that holds no history yet, while one is being rebuilt: OutOfHistory up to the
 * watermark, NotYetVisible beyond it, never a row; as a feed, no change, no version and no key, with the
 * history start at {@link Long#MAX_VALUE}, so that a feed reader knows it is behind.
 */
final class NoHistoryLookup implements VersionLookup, ChangeFeed {
    private final Watermark watermark;
    private final Set<String> tables;
    private final List<IndexDeclaration> indexes;

    NoHistoryLookup(Watermark watermark, Set<String> tables, List<IndexDeclaration> indexes) {
        this.watermark = watermark;
        this.tables = tables;
        this.indexes = indexes;
    }

    LookupResult at(String table, long timestamp) {
        if (!tables.contains(table)) {
            return new LookupResult.UnknownTable(table);
        }
        long w = watermark.get();
        return timestamp > w ? new LookupResult.NotYetVisible(w) : new LookupResult.OutOfHistory(Long.MAX_VALUE);
    }

    @Override
    public LookupResult asOf(String table, RowKey key, long timestamp) {
        return at(table, timestamp);
    }

    @Override
    public LookupResult current(String table, RowKey key) {
        return at(table, Long.MAX_VALUE);
    }

    @Override
    public LookupResult exact(String table, RowKey key, VersionId id) {
        return at(table, id.validFrom());
    }

    @Override
    public List<Change> changesAfter(Change after, long upTo, int limit) {
        return List.of();
    }

    @Override
    public Optional<Version> before(String table, RowKey key, Change at) {
        return Optional.empty();
    }

    /** No key; a probe of an index that is not declared fails as it would on the store. */
    @Override
    public List<RowKey> indexed(String table, List<String> columns, RowKey value, RowKey afterKey, int limit) {
        if (indexes.stream().noneMatch(d -> table != null && d.covers(table) && d.columns().equals(columns))) {
            throw new IllegalArgumentException("no index on " + table + "(" + (columns == null ? "" : String.join(",", columns))
                    + ") is declared; the declared indexes are " + (indexes.isEmpty() ? "none" : indexes.toString()));
        }
        return List.of();
    }

    @Override
    public Watermark watermark() {
        return watermark;
    }

    @Override
    public long historyStart() {
        return Long.MAX_VALUE;
    }

    @Override
    public Set<String> tables() {
        return tables;
    }
}
