package io.asofconnect.store;

import org.mapdb.BTreeMap;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Table name → small int id, so that a version's key carries four bytes instead of the table's name.
 * Kept in the meta map under {@value #PREFIX}{@code <table>} (so the meta checksum covers it and it
 * commits and rolls back with the versions that use it), mirrored in memory for readers.
 */
final class TableDictionary {
    static final String PREFIX = "store.table.";

    private final Path file;
    private final BTreeMap<String, String> meta;
    private final Map<String, Integer> ids = new ConcurrentHashMap<>();
    private int maxId;

    TableDictionary(Path file, BTreeMap<String, String> meta) {
        this.file = file;
        this.meta = meta;
    }

    /** Rereads the dictionary from the meta map (on open and after a rollback). */
    void reload() {
        ids.clear();
        maxId = 0;
        for (Map.Entry<String, String> e : meta.tailMap(PREFIX, true).entrySet()) {
            if (!e.getKey().startsWith(PREFIX)) {
                break;
            }
            int id;
            try {
                id = Integer.parseInt(e.getValue());
            } catch (NumberFormatException ex) {
                throw new StoreCorruptedException(file, "a table id in the table dictionary is not a number", ex);
            }
            if (id <= 0 || ids.containsValue(id)) {
                throw new StoreCorruptedException(file, "the table dictionary holds an invalid or repeated id " + id);
            }
            ids.put(e.getKey().substring(PREFIX.length()), id);
            maxId = Math.max(maxId, id);
        }
    }

    /** The table's id, or 0 when no version of it was ever written. */
    int id(String table) {
        Integer id = ids.get(table);
        return id == null ? 0 : id;
    }

    /** The table's id, assigning the next one (in the current transaction) if it has none. Writer only. */
    int idOrAssign(String table) {
        Integer id = ids.get(table);
        if (id != null) {
            return id;
        }
        int assigned = ++maxId;
        meta.put(PREFIX + table, Integer.toString(assigned));
        ids.put(table, assigned);
        return assigned;
    }
}
