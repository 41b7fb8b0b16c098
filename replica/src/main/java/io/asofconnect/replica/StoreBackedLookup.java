package io.asofconnect.replica;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.store.VersionStore;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.Watermark;
import io.asofconnect.common.lookup.VersionLookup;

import java.util.Optional;
import java.util.Set;

/**
 * The lookup rules of {@link VersionLookup} applied to a {@link VersionStore} and a watermark: the one
 * place that decides between Found, Absent, OutOfHistory and NotYetVisible, whoever feeds the store.
 */
public final class StoreBackedLookup implements VersionLookup {
    private final VersionStore store;
    private final Watermark watermark;
    private final Set<String> tables;

    public StoreBackedLookup(VersionStore store, Watermark watermark, Set<String> tables) {
        this.store = store;
        this.watermark = watermark;
        this.tables = Set.copyOf(tables);
    }

    @Override
    public LookupResult asOf(String table, RowKey key, long timestamp) {
        if (!tables.contains(table)) {
            return new LookupResult.UnknownTable(table);
        }
        long w = watermark.get();
        if (timestamp > w) {
            return new LookupResult.NotYetVisible(w);
        }
        long start = store.historyStart();
        if (timestamp < start) {
            return new LookupResult.OutOfHistory(start);
        }
        Optional<Version> floor = store.floor(table, key, timestamp);
        // Retention may have pruned this time while we read: the store raises the start before it removes.
        long startAfter = store.historyStart();
        if (timestamp < startAfter) {
            return new LookupResult.OutOfHistory(startAfter);
        }
        return toResult(floor);
    }

    @Override
    public LookupResult current(String table, RowKey key) {
        if (!tables.contains(table)) {
            return new LookupResult.UnknownTable(table);
        }
        return toResult(store.latest(table, key));
    }

    @Override
    public LookupResult exact(String table, RowKey key, VersionId id) {
        if (!tables.contains(table)) {
            return new LookupResult.UnknownTable(table);
        }
        long w = watermark.get();
        if (id.validFrom() > w) {
            // "No such version" could become "found" once the replica catches up: not an answer yet.
            return new LookupResult.NotYetVisible(w);
        }
        Optional<Version> found = store.find(table, key, id);
        if (found.isEmpty() && id.validFrom() < store.historyStart()) {
            return new LookupResult.OutOfHistory(store.historyStart());
        }
        return toResult(found);
    }

    private static LookupResult toResult(Optional<Version> v) {
        if (v.isEmpty()) {
            return LookupResult.NO_VERSION;
        }
        Version version = v.get();
        return version.isTombstone() ? new LookupResult.Absent(version) : new LookupResult.Found(version);
    }

    @Override
    public Watermark watermark() {
        return watermark;
    }

    @Override
    public long historyStart() {
        return store.historyStart();
    }

    @Override
    public Set<String> tables() {
        return tables;
    }
}
