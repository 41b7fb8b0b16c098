package io.asofconnect.store;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Everything the store holds, in memory: the rows ({@link RowIndex}), the small state beside them
 * ({@link StoreMeta}), schemas and tables. The same mutations serve the live writer and the replay of
 * the journal, so a replayed commit rebuilds exactly what the writer had; each can be committed (its
 * undo forgotten) or rolled back.
 */
final class MemoryStore {
    final RowIndex rows = new RowIndex();
    final StoreMeta meta = new StoreMeta();
    final SchemaRegistry schemas;
    final TableDictionary tables;
    final VersionCodec codec;

    MemoryStore(Path file, int schemaCacheSize, ChangeLog log) {
        this.schemas = new SchemaRegistry(file, schemaCacheSize, log::schema);
        this.tables = new TableDictionary(file, log::table);
        this.codec = new VersionCodec(file, schemas);
    }

    /** Adds or replaces the version at (validFrom, lsn, ordinal) of the row. */
    void put(int table, byte[] rowKey, long validFrom, long lsn, int ordinal, byte[] body) {
        RowIndex.RowBytes key = new RowIndex.RowBytes(rowKey);
        rows.set(table, key, PackedRow.with(rows.get(table, key), validFrom, lsn, ordinal, body));
    }

    /**
     * Per row, drops the versions before the horizon except the newest of them, and that one too if it
     * is a tombstone (VersionStore#prune).
     */
    long prune(long horizon) {
        long removed = 0;
        for (Map.Entry<Integer, ConcurrentHashMap<RowIndex.RowBytes, byte[]>> t : rows.all().entrySet()) {
            for (Map.Entry<RowIndex.RowBytes, byte[]> e : t.getValue().entrySet()) {
                byte[] row = e.getValue();
                int before = PackedRow.floor(row, horizon - 1) + 1;
                if (before == 0 || horizon == Long.MIN_VALUE) {
                    continue;
                }
                int drop = VersionCodec.isTombstone(row, before - 1) ? before : before - 1;
                if (drop > 0) {
                    rows.set(t.getKey(), e.getKey(), PackedRow.withoutFirst(row, drop));
                    removed += drop;
                }
            }
        }
        return removed;
    }

    void onCommit() {
        rows.onCommit();
        meta.onCommit();
        schemas.onCommit();
        tables.onCommit();
    }

    void onRollback() {
        rows.onRollback();
        meta.onRollback();
        schemas.onRollback();
        tables.onRollback();
    }
}
