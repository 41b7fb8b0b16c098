package io.asofconnect.replica.capture;

import io.asofconnect.replica.config.ReplicaConfig;

/**
 * When the batch consumer commits the store: after {@code replica.commit.interval.ms} or
 * {@code replica.commit.max.records}, whichever comes first, and at once when a batch advanced the watermark
 * (lookups wait for it) or ended the initial snapshot. A commit forces the store's file, so grouping batches
 * is the main lever on ingest speed; what waits uncommitted is re-read from the slot after a crash.
 */
record CommitPolicy(long intervalMs, int maxRecords) {

    static CommitPolicy of(ReplicaConfig config) {
        return new CommitPolicy(config.commitIntervalMs(), config.commitMaxRecords());
    }

    /**
     * @param records           records received since the last commit, this batch's included
     * @param sinceCommitMs     milliseconds since the last commit
     * @param watermarkAdvanced the batch's probes passed the published watermark
     * @param snapshotEnded     the batch holds the initial snapshot's last row
     */
    boolean due(long records, long sinceCommitMs, boolean watermarkAdvanced, boolean snapshotEnded) {
        return intervalMs == 0 || watermarkAdvanced || snapshotEnded || records >= maxRecords || sinceCommitMs >= intervalMs;
    }
}
