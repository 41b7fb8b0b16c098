package io.asofconnect.store;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Every row of every table in memory: table id → row key bytes → the row's {@link PackedRow}. One
 * writer replaces a row's array with a new one; readers get whatever array is published, never a
 * half-built one (the concurrent maps publish safely), and take no lock.
 *
 * <p>The first change of a row since the last commit remembers its previous array, so that a rollback
 * puts every touched row back exactly as committed.
 */
final class RowIndex {
    private final Map<Integer, ConcurrentHashMap<RowBytes, byte[]>> tables = new ConcurrentHashMap<>();
    private final Map<Touched, byte[]> undo = new HashMap<>();
    /** Tables whose map the current transaction created: a rollback removes them, as the dictionary forgets their ids. */
    private final List<Integer> createdSinceCommit = new ArrayList<>();
    /** Versions held; written by the one writer, read by metrics from any thread. */
    private volatile long versions;

    /** A row key's bytes as a hash key; {@link java.util.Arrays#equals} and a cached hash. */
    static final class RowBytes {
        final byte[] bytes;
        private final int hash;

        RowBytes(byte[] bytes) {
            this.bytes = bytes;
            this.hash = Arrays.hashCode(bytes);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof RowBytes r && r.hash == hash && Arrays.equals(r.bytes, bytes);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    private record Touched(int table, RowBytes key) {
    }

    /** The row's packed history, or null. */
    byte[] get(int table, byte[] rowKey) {
        Map<RowBytes, byte[]> rows = tables.get(table);
        return rows == null ? null : rows.get(new RowBytes(rowKey));
    }

    /** Publishes {@code row} (null removes it) as the row's history. Writer only. */
    void set(int table, RowBytes key, byte[] row) {
        ConcurrentHashMap<RowBytes, byte[]> rows = tables.get(table);
        if (rows == null) {
            rows = new ConcurrentHashMap<>();
            tables.put(table, rows);
            createdSinceCommit.add(table);
        }
        byte[] previous = row == null ? rows.remove(key) : rows.put(key, row);
        versions += count(row) - count(previous);
        Touched t = new Touched(table, key);
        if (!undo.containsKey(t)) {
            undo.put(t, previous);
        }
    }

    /** Sizes a table's map for {@code rows} rows before a checkpoint load (growing a 1M-entry map step by step cost a third of the load). */
    void presize(int table, int rows) {
        if (rows < 0 || table <= 0 || tables.containsKey(table)) {
            throw new MalformedEncodingException("invalid table size entry for table id " + table);
        }
        tables.put(table, new ConcurrentHashMap<>(Math.max(16, rows + rows / 3 + 1)));
    }

    int size(int table) {
        Map<RowBytes, byte[]> rows = tables.get(table);
        return rows == null ? 0 : rows.size();
    }

    /** Loads a committed row (checkpoint load): no undo entry. */
    void load(int table, byte[] rowKey, byte[] row) {
        byte[] previous = tables.computeIfAbsent(table, t -> new ConcurrentHashMap<>()).put(new RowBytes(rowKey), row);
        versions += count(row) - count(previous);
    }

    private static int count(byte[] row) {
        return row == null ? 0 : PackedRow.count(row);
    }

    /** Versions held, all tables. */
    long versions() {
        return versions;
    }

    /** Keys held, all tables. */
    long keys() {
        long n = 0;
        for (Map<RowBytes, byte[]> rows : tables.values()) {
            n += rows.size();
        }
        return n;
    }

    byte[] get(int table, RowBytes key) {
        Map<RowBytes, byte[]> rows = tables.get(table);
        return rows == null ? null : rows.get(key);
    }

    void onCommit() {
        undo.clear();
        createdSinceCommit.clear();
    }

    void onRollback() {
        for (Map.Entry<Touched, byte[]> e : undo.entrySet()) {
            ConcurrentHashMap<RowBytes, byte[]> rows = tables.get(e.getKey().table());
            byte[] current = e.getValue() == null ? rows.remove(e.getKey().key()) : rows.put(e.getKey().key(), e.getValue());
            versions += count(e.getValue()) - count(current);
        }
        undo.clear();
        // Empty now: every row in them was new. Left behind, a checkpoint would name a table id the
        // dictionary no longer holds, and the next open would call the store damaged.
        for (int table : createdSinceCommit) {
            tables.remove(table);
        }
        createdSinceCommit.clear();
    }

    /** The table's row keys in unsigned byte order (the order of the checkpoint and of {@code keys()}). */
    List<byte[]> sortedKeys(int table) {
        Map<RowBytes, byte[]> rows = tables.get(table);
        if (rows == null) {
            return List.of();
        }
        List<byte[]> keys = new ArrayList<>(rows.size());
        for (RowBytes k : rows.keySet()) {
            keys.add(k.bytes);
        }
        keys.sort(Arrays::compareUnsigned);
        return keys;
    }

    /** Table ids that have (or had) rows, ascending. */
    List<Integer> tableIds() {
        List<Integer> ids = new ArrayList<>(tables.keySet());
        ids.sort(Integer::compare);
        return ids;
    }

    /** Every row of every table, for prune (writer only; the writer's own set() calls do not disturb it). */
    Map<Integer, ConcurrentHashMap<RowBytes, byte[]>> all() {
        return tables;
    }
}
