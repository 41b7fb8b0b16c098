package io.asofconnect.replica.capture;

import io.asofconnect.common.lookup.RowKey;

import java.util.HashMap;
import java.util.Map;

/**
 * Numbers the changes of one key that share one LSN within a batch, in batch order: the delete and create of
 * a key update, the rows of one multi-insert record, a snapshot's rows. Changes sharing an LSN come from one
 * WAL record (or one snapshot) and so follow each other, so counting restarts whenever the LSN changes; and
 * a run's first change is only entered into the map once a second one with the same LSN follows, so streamed
 * changes that each have their own LSN cost no map at all.
 */
final class SameLsnOrdinals {
    private Map<TableKey, Integer> counts = new HashMap<>();
    private boolean inRun;
    private Long runLsn;
    private String firstTable;
    private RowKey firstKey;

    /** Starts a batch: its ordinals begin again at 0. */
    void reset() {
        inRun = false;
        endRun();
    }

    /** The ordinal of this change among the batch's earlier changes of the same table, key and LSN. */
    int next(String table, Long lsn, RowKey key) {
        if (!inRun || !java.util.Objects.equals(lsn, runLsn)) {
            endRun();
            inRun = true;
            runLsn = lsn;
            firstTable = table;
            firstKey = key;
            return 0;
        }
        if (firstKey != null) {
            counts.put(new TableKey(firstTable, firstKey), 1);
            firstKey = null;
            firstTable = null;
        }
        TableKey k = new TableKey(table, key);
        Integer seen = counts.get(k);
        counts.put(k, seen == null ? 1 : seen + 1);
        return seen == null ? 0 : seen;
    }

    private void endRun() {
        firstKey = null;
        firstTable = null;
        if (!counts.isEmpty()) {
            // A fresh map rather than clear(): clear() walks the whole table, which a snapshot batch grew large.
            counts = new HashMap<>();
        }
    }

    private record TableKey(String table, RowKey key) {
    }
}
