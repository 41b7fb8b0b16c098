package io.asofconnect.replica.capture;

import java.util.concurrent.atomic.AtomicLong;

/**
 * What a replica has done since it started, for metrics: counts kept by the capture thread and the
 * replica's life-cycle, read from any thread. One instance per replica, across rebuilds of its store.
 */
public final class ReplicaStats {
    private final AtomicLong changesApplied = new AtomicLong();
    private final AtomicLong snapshotRows = new AtomicLong();
    private final AtomicLong rebuilds = new AtomicLong();
    private final AtomicLong quarantines = new AtomicLong();
    private final AtomicLong gapDetections = new AtomicLong();
    private volatile long snapshotRowsEstimated = -1;
    private volatile long retainedWalBytes = -1;

    /** Row changes and snapshot rows made durable by one commit of the store. */
    public void committed(long snapshot, long changes) {
        if (snapshot > 0) {
            snapshotRows.addAndGet(snapshot);
        }
        changesApplied.addAndGet(snapshot + changes);
    }

    public void rebuilt() {
        rebuilds.incrementAndGet();
    }

    public void quarantined() {
        quarantines.incrementAndGet();
    }

    public void gapDetected() {
        gapDetections.incrementAndGet();
    }

    /** {@code pg_class.reltuples} summed over the captured tables when the replica started; -1 if unknown. */
    public void snapshotRowsEstimated(long rows) {
        snapshotRowsEstimated = rows;
    }

    /** WAL the server keeps for the replica's slot, as the last watermark probe read it; -1 if unknown. */
    public void retainedWalBytes(long bytes) {
        retainedWalBytes = bytes;
    }

    public long changesApplied() {
        return changesApplied.get();
    }

    public long snapshotRows() {
        return snapshotRows.get();
    }

    public long snapshotRowsEstimated() {
        return snapshotRowsEstimated;
    }

    public long retainedWalBytes() {
        return retainedWalBytes;
    }

    public long rebuilds() {
        return rebuilds.get();
    }

    public long quarantines() {
        return quarantines.get();
    }

    public long gapDetections() {
        return gapDetections.get();
    }
}
