package io.asofconnect.replica.capture;

import io.asofconnect.replica.ReplicaStats;
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

    /** After a commit that stored snapshot rows. */
    void stored() {
        long now = clock.getAsLong();
        long rows = stats.snapshotRows();
        if (startedAt == Long.MIN_VALUE) {
            startedAt = now;
            startRows = rows;
            lastLog = now;
            return;
        }
        if (now - lastLog < INTERVAL_MS) {
            return;
        }
        lastLog = now;
        double rate = (rows - startRows) * 1000.0 / Math.max(1, now - startedAt);
        long estimate = stats.snapshotRowsEstimated();
        if (estimate > 0 && rows <= estimate) {
            long left = rate > 0 ? Math.round((estimate - rows) / rate) : -1;
            LOG.info("Replica {}: initial snapshot {} of about {} rows ({}%), {} rows/s, about {} s left", replicaName, rows, estimate,
                    rows * 100 / estimate, Math.round(rate), left);
        } else {
            LOG.info("Replica {}: initial snapshot {} rows, {} rows/s (the table statistics estimate {} rows; run ANALYZE for a better one)",
                    replicaName, rows, Math.round(rate), estimate);
        }
    }
}
