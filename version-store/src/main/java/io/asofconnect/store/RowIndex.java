package io.asofconnect.store;

import io.asofconnect.common.data.MalformedEncodingException;

import io.asofconnect.common.lookup.RowKey;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

/**
 * Every row of every table in memory: per table id, a {@link RowTable} of keyed {@link PackedRow}s. One
 * writer replaces a row's array with a new one; readers get whatever array is published, never a
 * half-built one, and take no lock.
 *
 * <p>Each change since the last commit remembers the array it replaced, so that a rollback, undoing the
 * changes newest first, puts every touched row back exactly as committed.
 */
final class RowIndex {
    /** Indexed by table id (ids are small and dense, {@link TableDictionary}); replaced whole when a table is added or dropped. */
    private volatile RowTable[] tables = new RowTable[0];
    /** Far above any real count of tables; a larger id read from a file is damage, not a reason to allocate. */
    private static final int MAX_TABLE_ID = 1 << 20;
    /**
     * Every change since the last commit, in order: a rollback undoes them newest first, which leaves each row as
     * it was committed. A list, not a map keyed by row: no hashing and no lookup per change (the snapshot puts
     * every row once), and a row changed twice in one transaction is undone twice, in reverse.
     */
    private final List<Undo> undo = new ArrayList<>();
    /** Tables the current transaction created: a rollback removes them, as the dictionary forgets their ids. */
    private final List<Integer> createdSinceCommit = new ArrayList<>();
    /** Versions held; written by the one writer, read by metrics from any thread. */
    private volatile long versions;

    /** One change since the last commit: the table, the row's key, and the row it replaced (null: there was none). */
    private record Undo(int table, byte[] key, byte[] previous) {
    }

    private RowTable table(int id) {
        RowTable[] t = tables;
        return id > 0 && id < t.length ? t[id] : null;
    }

    private RowTable create(int id, int expectedRows) {
        if (id <= 0 || id > MAX_TABLE_ID) {
            throw new MalformedEncodingException("invalid table id " + id);
        }
        RowTable[] t = tables;
        RowTable[] next = Arrays.copyOf(t, Math.max(t.length, id + 1));
        RowTable created = new RowTable(expectedRows);
        next[id] = created;
        tables = next;
        return created;
    }

    /** The row's packed history, or null. Any thread. */
    byte[] get(int table, RowKey key) {
        RowTable rows = table(table);
        return rows == null ? null : rows.get(key);
    }

    /** The row's packed history, or null; {@code keyHash} is the key's {@link RowKey#hashOfEncoded}. */
    byte[] get(int table, byte[] rowKey, int keyHash) {
        RowTable rows = table(table);
        return rows == null ? null : rows.get(rowKey, 0, rowKey.length, keyHash);
    }

    /** Publishes {@code row} (a row keyed {@code rowKey}; null removes the row) as the row's history. Writer only. */
    void set(int table, byte[] rowKey, byte[] row) {
        set(table, rowKey, RowKey.hashOfEncoded(rowKey, 0, rowKey.length), row);
    }

    /** As {@link #set(int, byte[], byte[])}, with the key's {@link RowKey#hashOfEncoded} already computed. Writer only. */
    void set(int table, byte[] rowKey, int keyHash, byte[] row) {
        RowTable rows = table(table);
        if (rows == null) {
            if (row == null) {
                return;
            }
            rows = create(table, 16);
            createdSinceCommit.add(table);
        }
        byte[] previous = row == null ? rows.remove(rowKey, 0, rowKey.length) : rows.put(row, keyHash);
        versions += count(row) - count(previous);
        undo.add(new Undo(table, rowKey, previous));
    }

    /** Sizes a table for {@code rows} rows before a checkpoint load (growing a 1M-row table step by step cost a third of the load). */
    void presize(int table, int rows) {
        if (rows < 0 || table(table) != null) {
            throw new MalformedEncodingException("invalid table size entry for table id " + table);
        }
        create(table, rows);
    }

    int size(int table) {
        RowTable rows = table(table);
        return rows == null ? 0 : rows.size();
    }

    /** Loads a committed keyed row (checkpoint load): no undo entry. */
    void load(int table, byte[] row) {
        RowTable rows = table(table);
        if (rows == null) {
            rows = create(table, 16);
        }
        byte[] previous = rows.put(row);
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
        for (RowTable rows : tables) {
            n += rows == null ? 0 : rows.size();
        }
        return n;
    }

    void onCommit() {
        undo.clear();
        createdSinceCommit.clear();
    }

    void onRollback() {
        for (int i = undo.size() - 1; i >= 0; i--) {
            Undo u = undo.get(i);
            RowTable rows = table(u.table());
            byte[] current = u.previous() == null ? rows.remove(u.key(), 0, u.key().length) : rows.put(u.previous());
            versions += count(u.previous()) - count(current);
        }
        undo.clear();
        // Empty now: every row in them was new. Left behind, a checkpoint would name a table id the
        // dictionary no longer holds, and the next open would call the store damaged.
        if (!createdSinceCommit.isEmpty()) {
            RowTable[] next = tables.clone();
            for (int table : createdSinceCommit) {
                next[table] = null;
            }
            tables = next;
        }
        createdSinceCommit.clear();
    }

    /** The table's rows in unsigned byte order of their keys (the order of the checkpoint and of {@code keys()}). */
    List<byte[]> rowsInKeyOrder(int table) {
        RowTable rows = table(table);
        if (rows == null) {
            return List.of();
        }
        List<byte[]> sorted = new ArrayList<>(rows.size());
        rows.forEach(sorted::add);
        sorted.sort(PackedRow::compareKeys);
        return sorted;
    }

    /** Table ids that have (or had) rows, ascending. */
    List<Integer> tableIds() {
        List<Integer> ids = new ArrayList<>();
        RowTable[] t = tables;
        for (int id = 1; id < t.length; id++) {
            if (t[id] != null) {
                ids.add(id);
            }
        }
        return ids;
    }

    /** Every row of the table, for prune (writer only; the action may replace or remove the row it is given). */
    void forEachRow(int table, Consumer<byte[]> action) {
        RowTable rows = table(table);
        if (rows != null) {
            rows.forEach(action);
        }
    }
}
