package io.asofconnect.sink;

import io.asofconnect.metrics.Metered;
import io.asofconnect.writer.WriterMetrics;

/**
 * What an operator graphs to tell whether the sink is healthy: rows written, transactions and their latency,
 * batch sizes, retries, fenced commits, records sent to the dead letter queue, rewinds on open. Published
 * through the task's plugin metrics, tagged with its connector and task by the worker.
 */
final class SinkMetrics implements WriterMetrics {
    private final Metered.Counter rowsWritten;
    private final Metered.Counter transactions;
    private final Metered.Distribution transactionTimeMs;
    private final Metered.Distribution batchSize;
    private final Metered.Counter retries;
    private final Metered.Counter fencedCommits;
    private final Metered.Counter deadLettered;
    private final Metered.Counter rewinds;

    SinkMetrics(Metered m) {
        rowsWritten = m.counter("sink-rows-written", "rows written to the target tables in committed transactions");
        transactions = m.counter("sink-transactions", "committed transactions (rows and offsets together)");
        transactionTimeMs = m.distribution("sink-transaction-time-ms", "time in ms from a flush's first statement to its commit");
        batchSize = m.distribution("sink-batch-size", "number of records in one committed transaction");
        retries = m.counter("sink-retries", "writes or take-overs that failed for a transient reason and are retried");
        fencedCommits = m.counter("sink-fenced-commits", "commits refused because another task took the partition over (epoch fencing)");
        deadLettered = m.counter("sink-dead-letter-records", "records that could not be written and went to the errant record reporter");
        rewinds = m.counter("sink-rewinds", "partitions rewound on open to the offset held in the target");
    }

    @Override
    public void committed(int records, int written, long nanos) {
        transactions.increment();
        rowsWritten.record(written);
        batchSize.record(records);
        transactionTimeMs.record(nanos / 1_000_000.0);
    }

    void retried() {
        retries.increment();
    }

    @Override
    public void fenced() {
        fencedCommits.increment();
    }

    void deadLettered() {
        deadLettered.increment();
    }

    void rewound(int partitions) {
        rewinds.record(partitions);
    }
}
