package io.asofconnect.store;

import io.asofconnect.common.lookup.RowKey;

import java.nio.file.Path;

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
        // One hash of the key for the lookup, the publication and the undo entry.
        int keyHash = RowKey.hashOfEncoded(rowKey, 0, rowKey.length);
        byte[] row = rows.get(table, rowKey, keyHash);
        rows.set(table, rowKey, keyHash, row == null
                ? PackedRow.first(rowKey, validFrom, lsn, ordinal, body)
                : PackedRow.with(row, validFrom, lsn, ordinal, body));
    }

    /**
     * Per row, drops the versions before the horizon except the newest of them, and that one too if it
     * is a tombstone (VersionStore#prune).
     */
    long prune(long horizon) {
        if (horizon == Long.MIN_VALUE) {
            return 0;
        }
        long[] removed = {0};
        for (int table : rows.tableIds()) {
            rows.forEachRow(table, row -> {
                int before = PackedRow.floor(row, horizon - 1) + 1;
                if (before == 0) {
                    return;
                }
                int drop = VersionCodec.isTombstone(row, before - 1) ? before : before - 1;
                if (drop > 0) {
                    rows.set(table, PackedRow.key(row), PackedRow.withoutFirst(row, drop));
                    removed[0] += drop;
                }
            });
        }
        return removed[0];
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
