package io.asofconnect.replica.capture;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.function.LongSupplier;

/**
 * Logs a long initial snapshot's progress at a steady pace: rows stored, percent of the estimate, rate and
 * time left, the same numbers the replica's metrics show. Silent for snapshots shorter than one interval.
 */
final class SnapshotProgress {
    private static final Logger LOG = LoggerFactory.getLogger(SnapshotProgress.class);
    static final long INTERVAL_MS = 10_000;

    private final String replicaName;
    private final ReplicaStats stats;
    private final LongSupplier clock;
    private long startedAt = Long.MIN_VALUE;
    private long startRows;
    private long lastLog;

    SnapshotProgress(String replicaName, ReplicaStats stats, LongSupplier clock) {
        this.replicaName = replicaName;
        this.stats = stats;
        this.clock = clock;
    }

    /**
     * After a commit that stored snapshot rows.
     *
     * @return the progress line logged now, or null when the last one is less than an interval old
     */
    String stored() {
        long now = clock.getAsLong();
        long rows = stats.snapshotRows();
        if (startedAt == Long.MIN_VALUE) {
            startedAt = now;
            startRows = rows;
            lastLog = now;
            return null;
        }
        if (now - lastLog < INTERVAL_MS) {
            return null;
        }
        lastLog = now;
        double rate = (rows - startRows) * 1000.0 / Math.max(1, now - startedAt);
        long estimate = stats.snapshotRowsEstimated();
        String line;
        if (estimate > 0 && rows <= estimate) {
            long left = rate > 0 ? Math.round((estimate - rows) / rate) : -1;
            line = "Replica " + replicaName + ": initial snapshot " + rows + " of about " + estimate + " rows ("
                    + rows * 100 / estimate + "%), " + Math.round(rate) + " rows/s, about " + left + " s left";
        } else {
            line = "Replica " + replicaName + ": initial snapshot " + rows + " rows, " + Math.round(rate)
                    + " rows/s (the table statistics estimate " + estimate + " rows; run ANALYZE for a better one)";
        }
        LOG.info(line);
        return line;
    }
}
