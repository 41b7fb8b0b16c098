package io.asofconnect.replica;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.common.lookup.Watermark;

import java.util.Set;

/**
 * The answers of a store that holds no history yet, while one is being rebuilt: OutOfHistory up to the
 * watermark, NotYetVisible beyond it, never a row.
 */
final class NoHistoryLookup implements VersionLookup {
    private final Watermark watermark;
    private final Set<String> tables;

    NoHistoryLookup(Watermark watermark, Set<String> tables) {
        this.watermark = watermark;
        this.tables = tables;
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
