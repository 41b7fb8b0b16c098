package io.asofconnect.store;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;

/**
 * Table name → small int id, so that a row's checkpoint key carries four bytes instead of the table's
 * name. A table first written in a transaction is handed to {@code onNew} (the commit record being
 * built) and forgotten if the transaction rolls back.
 */
final class TableDictionary {
    private final Path file;
    private final Map<String, Integer> ids = new ConcurrentHashMap<>();
    private final List<String> addedSinceCommit = new ArrayList<>();
    private final BiConsumer<Integer, String> onNew;
    private int maxId;

    TableDictionary(Path file, BiConsumer<Integer, String> onNew) {
        this.file = file;
        this.onNew = onNew;
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
        ids.put(table, assigned);
        addedSinceCommit.add(table);
        onNew.accept(assigned, table);
        return assigned;
    }

    /** Adds a table read back from a checkpoint or the journal. */
    void restore(int id, String table) {
        if (id <= 0 || id == Integer.MAX_VALUE || ids.containsKey(table) || ids.containsValue(id)) {
            throw new StoreCorruptedException(file, "the table dictionary holds an invalid or repeated id " + id);
        }
        ids.put(table, id);
        maxId = Math.max(maxId, id);
    }

    void onCommit() {
        addedSinceCommit.clear();
    }

    void onRollback() {
        for (String t : addedSinceCommit) {
            ids.remove(t);
        }
        addedSinceCommit.clear();
        maxId = ids.values().stream().mapToInt(Integer::intValue).max().orElse(0);
    }

    Map<String, Integer> all() {
        return ids;
    }
}
