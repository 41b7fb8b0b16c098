package io.asofconnect.store;

import io.asofconnect.common.lookup.Change;
import io.asofconnect.common.lookup.IndexDeclaration;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.stream.Collectors;

/**
 * What the store derives from its versions for a {@link io.asofconnect.common.lookup.ChangeFeed}: the change feed
 * of the feed tables and the declared secondary indexes ({@link StoreOptions#feedTables()},
 * {@link StoreOptions#indexes()}). Only a store with declarations has one, so a store without pays nothing on
 * its puts.
 *
 * <p>Content, always as of the last commit:
 * <ul>
 *   <li>the feed: one {@link Change} per retained version of a feed table, in {@link Change} order. Versions a
 *   prune keeps from before its horizon (each row's newest) stay in it: a reader starting from the beginning
 *   must meet every row that still exists. A reader already past them and behind the horizon has lost the
 *   versions pruned in between: it compares its position with {@link VersionStore#historyStart()};</li>
 *   <li>per declared index, per index value ({@link IndexDeclaration#valueOf}), the keys whose rows have a retained
 *   version with that value, each with the number of such versions, so that a version replaced at its position
 *   (a replay) takes its old value out.</li>
 * </ul>
 *
 * <p>The writer collects what its puts add or replace ({@link #onPut}) and applies it at {@link #onCommit};
 * {@link #onRollback} drops it. A prune that removed versions makes the commit rebuild everything by one scan
 * of the rows, decoding each indexed version ({@link #rebuild}); so does opening the store, after the
 * checkpoint load and the journal replay. Readers take no lock: the structures are concurrent, a rebuilt
 * set of them replaces the old one through a volatile field, and a commit's additions become visible one by
 * one while {@link #onCommit} runs, before the commit returns (and before a caller can move the watermark
 * past them).
 */
final class FeedIndexes {
    private final Path file;
    private final MemoryStore mem;
    private final List<IndexDeclaration> declarations;
    /** The feed tables, lower-cased: tables are matched as {@link IndexDeclaration#covers} matches them. */
    private final Set<String> feedTables;
    /** Writer only: what each table name is, resolved once. */
    private final Map<String, Role> roles = new HashMap<>();

    private volatile State state;

    /** Writer only: what the current transaction adds, in put order. */
    private final List<Change> pendingFeed = new ArrayList<>();
    private final List<IndexOp> pendingIndex = new ArrayList<>();
    /** Writer only: the transaction pruned versions, so its commit rebuilds. */
    private boolean rebuildAtCommit;

    /** What a table takes part in: the feed, and which indexes. */
    private record Role(boolean feed, List<IndexDeclaration> indexes) {
        boolean any() {
            return feed || !indexes.isEmpty();
        }
    }

    /** One version's contribution to an index: {@code delta} +1 when it is added, -1 when it is replaced. */
    private record IndexOp(IndexDeclaration declaration, RowKey value, RowKey key, int delta) {
    }

    /** The derived structures; replaced whole by a rebuild. */
    private static final class State {
        final ConcurrentSkipListSet<Change> feed = new ConcurrentSkipListSet<>();
        /** Per declaration, index value to the keys having it, each with its count of versions having it. */
        final Map<IndexDeclaration, ConcurrentHashMap<RowKey, ConcurrentSkipListMap<RowKey, Integer>>> indexes = new HashMap<>();

        State(List<IndexDeclaration> declarations) {
            for (IndexDeclaration d : declarations) {
                indexes.put(d, new ConcurrentHashMap<>());
            }
        }

        void add(IndexDeclaration d, RowKey value, RowKey key, int delta) {
            ConcurrentHashMap<RowKey, ConcurrentSkipListMap<RowKey, Integer>> byValue = indexes.get(d);
            ConcurrentSkipListMap<RowKey, Integer> keys = byValue.computeIfAbsent(value, v -> new ConcurrentSkipListMap<>());
            keys.compute(key, (k, count) -> {
                int n = (count == null ? 0 : count) + delta;
                return n <= 0 ? null : n;
            });
            if (keys.isEmpty()) {
                byValue.remove(value, keys);
            }
        }
    }

    FeedIndexes(Path file, MemoryStore mem, StoreOptions options) {
        this.file = file;
        this.mem = mem;
        this.declarations = options.indexes();
        this.feedTables = options.feedTables().stream().map(t -> t.toLowerCase(Locale.ROOT)).collect(Collectors.toUnmodifiableSet());
        this.state = new State(declarations);
    }

    private Role role(String table) {
        Role r = roles.get(table);
        if (r == null) {
            List<IndexDeclaration> on = declarations.stream().filter(d -> d.covers(table)).toList();
            r = new Role(feedTables.contains(table.toLowerCase(Locale.ROOT)), on);
            roles.put(table, r);
        }
        return r;
    }

    /**
     * Notes a put before the store applies it (so that the version it replaces, if any, is still in the row).
     * Writer only.
     */
    void onPut(String table, int tableId, RowKey key, byte[] rowKey, Version version) {
        Role role = role(table);
        if (!role.any()) {
            return;
        }
        if (role.feed()) {
            pendingFeed.add(new Change(version.id(), table, key));
        }
        if (role.indexes().isEmpty()) {
            return;
        }
        byte[] row = mem.rows.get(tableId, rowKey, RowKey.hashOfEncoded(rowKey, 0, rowKey.length));
        if (row != null) {
            SourcePosition p = version.position();
            int i = PackedRow.indexOf(row, version.validFrom(), p.lsn(), p.ordinal());
            if (i >= 0 && !VersionCodec.isTombstone(row, i)) {
                // A replay replacing a version: rare, so its old body is decoded to take its values out.
                Version replaced = mem.codec.decode(table, row, i);
                for (IndexDeclaration d : role.indexes()) {
                    RowKey value = d.valueOf(replaced.row());
                    if (value != null) {
                        pendingIndex.add(new IndexOp(d, value, key, -1));
                    }
                }
            }
        }
        if (!version.isTombstone()) {
            for (IndexDeclaration d : role.indexes()) {
                RowKey value = d.valueOf(version.row());
                if (value != null) {
                    pendingIndex.add(new IndexOp(d, value, key, +1));
                }
            }
        }
    }

    /** Notes a prune of the current transaction that removed {@code removed} versions. Writer only. */
    void onPrune(long removed) {
        if (removed > 0) {
            rebuildAtCommit = true;
        }
    }

    /** Applies the transaction's puts and prunes, once the store's commit is durable. Writer only. */
    void onCommit() {
        try {
            if (rebuildAtCommit) {
                rebuild();
                return;
            }
            State s = state;
            s.feed.addAll(pendingFeed);
            // Additions first: a replayed version takes its value out and puts it back, and a reader between the two
            // must not miss a row whose version was committed long ago.
            for (IndexOp op : pendingIndex) {
                if (op.delta() > 0) {
                    s.add(op.declaration(), op.value(), op.key(), op.delta());
                }
            }
            for (IndexOp op : pendingIndex) {
                if (op.delta() <= 0) {
                    s.add(op.declaration(), op.value(), op.key(), op.delta());
                }
            }
        } finally {
            clearPending();
        }
    }

    void onRollback() {
        clearPending();
    }

    private void clearPending() {
        pendingFeed.clear();
        pendingIndex.clear();
        rebuildAtCommit = false;
    }

    /**
     * Builds the feed and indexes anew from the committed rows, by one scan, and publishes them. Called with no
     * pending writes: after the store is loaded, and at the commit of a prune.
     */
    void rebuild() {
        State next = new State(declarations);
        Map<String, Integer> tables = mem.tables.all();
        for (Map.Entry<String, Integer> t : tables.entrySet()) {
            String table = t.getKey();
            Role role = role(table);
            if (!role.any()) {
                continue;
            }
            mem.rows.forEachRow(t.getValue(), row -> {
                RowKey key;
                try {
                    key = RowKey.decode(PackedRow.key(row));
                } catch (RuntimeException e) {
                    throw new StoreCorruptedException(file, "a row key of table " + table + " does not decode", e);
                }
                int n = PackedRow.count(row);
                for (int i = 0; i < n; i++) {
                    long validFrom = PackedRow.validFrom(row, i);
                    if (role.feed()) {
                        next.feed.add(new Change(new VersionId(validFrom,
                                new SourcePosition(PackedRow.lsn(row, i), PackedRow.ordinal(row, i))), table, key));
                    }
                    if (!role.indexes().isEmpty() && !VersionCodec.isTombstone(row, i)) {
                        Version v = mem.codec.decode(table, row, i);
                        for (IndexDeclaration d : role.indexes()) {
                            RowKey value = d.valueOf(v.row());
                            if (value != null) {
                                next.add(d, value, key, +1);
                            }
                        }
                    }
                }
            });
        }
        state = next;
    }

    /** ChangeFeed#changesAfter over the committed feed. Any thread. */
    List<Change> changesAfter(Change after, long upTo, int limit) {
        if (after == null) {
            throw new IllegalArgumentException("changesAfter needs a change to start after: Change.START for the beginning");
        }
        if (limit < 0) {
            throw new IllegalArgumentException("limit must be at least 0, was " + limit);
        }
        List<Change> out = new ArrayList<>(Math.min(limit, 1024));
        for (Change c : state.feed.tailSet(after, false)) {
            if (out.size() >= limit || c.id().validFrom() > upTo) {
                break;
            }
            out.add(c);
        }
        return out;
    }

    /** ChangeFeed#indexed over the committed indexes. Any thread. */
    List<RowKey> indexed(String table, List<String> columns, RowKey value, RowKey afterKey, int limit) {
        IndexDeclaration d = declaration(table, columns);
        if (limit < 0) {
            throw new IllegalArgumentException("limit must be at least 0, was " + limit);
        }
        if (value == null) {
            return List.of();
        }
        ConcurrentSkipListMap<RowKey, Integer> keys = state.indexes.get(d).get(value);
        if (keys == null) {
            return List.of();
        }
        NavigableMap<RowKey, Integer> tail = afterKey == null ? keys : keys.tailMap(afterKey, false);
        List<RowKey> out = new ArrayList<>(Math.min(limit, 1024));
        for (RowKey k : tail.keySet()) {
            if (out.size() >= limit) {
                break;
            }
            out.add(k);
        }
        return out;
    }

    /** The declaration of the index on {@code table}'s {@code columns}. */
    private IndexDeclaration declaration(String table, List<String> columns) {
        for (IndexDeclaration d : declarations) {
            if (table != null && d.covers(table) && d.columns().equals(columns)) {
                return d;
            }
        }
        throw noSuchIndex(declarations, table, columns);
    }

    /** The error for a probe of an index that is not declared, naming those that are. */
    static IllegalArgumentException noSuchIndex(List<IndexDeclaration> declarations, String table, List<String> columns) {
        return new IllegalArgumentException("no index on " + table + (columns == null ? "()" : "(" + String.join(",", columns) + ")")
                + " is declared; the declared indexes are " + (declarations.isEmpty() ? "none" : declarations.toString()));
    }
}
