package io.asofconnect.windowjoin;

import io.asofconnect.metrics.Metered;
import io.asofconnect.writer.WriterMetrics;

/**
 * What an operator graphs to tell whether the join is healthy: rows written by kind, late records, records held in
 * windows, the task's watermark, transactions, retries and rebuilds. Published through the task's plugin metrics.
 */
final class JoinMetrics implements WriterMetrics {
    private final Metered.Counter rowsWritten;
    private final Metered.Counter transactions;
    private final Metered.Distribution transactionTimeMs;
    private final Metered.Counter matched;
    private final Metered.Counter unmatched;
    private final Metered.Counter late;
    private final Metered.Counter badRecords;
    private final Metered.Counter retries;
    private final Metered.Counter fencedCommits;
    private final Metered.Counter rebuilds;
    private final Metered.Distribution replayMs;

    JoinMetrics(Metered m) {
        rowsWritten = m.counter("join-rows-written", "output rows written in committed transactions");
        transactions = m.counter("join-transactions", "committed transactions (rows, offsets, held offsets and watermarks together)");
        transactionTimeMs = m.distribution("join-transaction-time-ms", "time in ms from a flush's first statement to its commit");
        matched = m.counter("join-matched-rows", "matched rows produced (before a commit; a rebuild produces again only rows not yet committed)");
        unmatched = m.counter("join-unmatched-rows", "unmatched rows produced when a window closed without a match");
        late = m.counter("join-late-records", "records behind their partition's watermark, handled by join.late.policy");
        badRecords = m.counter("join-bad-records", "records whose key, event time or value could not be read; sent to the errant record reporter");
        retries = m.counter("join-retries", "writes or take-overs that failed for a transient reason; the state is rebuilt from the log");
        fencedCommits = m.counter("join-fenced-commits", "commits refused because another task took the partition over (epoch fencing)");
        rebuilds = m.counter("join-rebuilds", "pairs of partitions whose window state was rebuilt by replaying the log");
        replayMs = m.distribution("join-replay-ms", "time in ms from a rebuild's rewind until both partitions of the pair caught up");
    }

    @Override
    public void committed(int records, int written, long nanos) {
        transactions.increment();
        rowsWritten.record(written);
        transactionTimeMs.record(nanos / 1_000_000.0);
    }

    @Override
    public void fenced() {
        fencedCommits.increment();
    }

    void produced(boolean isMatch) {
        (isMatch ? matched : unmatched).increment();
    }

    void late() {
        late.increment();
    }

    void bad() {
        badRecords.increment();
    }

    void retried() {
        retries.increment();
    }

    void rebuilt(int pairs) {
        rebuilds.record(pairs);
    }

    void replayed(long ms) {
        replayMs.record(ms);
    }
}
