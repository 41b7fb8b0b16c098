package io.asofconnect.sink;

import io.asofconnect.metrics.testing.RecordingSinkTaskContext;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Drives a real task the way a Connect worker does: start, open, put (redelivering the same batch after a
 * {@link RetriableException}, after the timeout the task asked for), preCommit, close, stop.
 */
final class SinkDriver implements AutoCloseable {
    final ExactlyOnceJdbcSinkTask task;
    final RecordingSinkTaskContext context;
    int retriableFailures;

    SinkDriver(Map<String, String> props, ErrantRecordReporter reporter) {
        this(new ExactlyOnceJdbcSinkTask(), props, reporter);
    }

    SinkDriver(ExactlyOnceJdbcSinkTask task, Map<String, String> props, ErrantRecordReporter reporter) {
        this.task = task;
        context = new RecordingSinkTaskContext(props, reporter);
        task.initialize(context);
        task.start(props);
    }

    SinkDriver open(TopicPartition... tps) {
        context.assignment.addAll(List.of(tps));
        task.open(List.of(tps));
        return this;
    }

    /** put, redelivered until accepted; {@code betweenAttempts} runs after each retriable failure. */
    void deliver(Collection<SinkRecord> batch, Runnable betweenAttempts) {
        for (int attempt = 0; attempt < 50; attempt++) {
            try {
                task.put(batch);
                return;
            } catch (RetriableException e) {
                retriableFailures++;
                betweenAttempts.run();
                pause(context.timeoutMs);
            }
        }
        throw new AssertionError("the batch was not accepted after 50 deliveries");
    }

    void deliver(Collection<SinkRecord> batch) {
        deliver(batch, () -> { });
    }

    Map<TopicPartition, Long> commit() {
        Map<TopicPartition, OffsetAndMetadata> current = new HashMap<>();
        Map<TopicPartition, Long> out = new HashMap<>();
        task.preCommit(current).forEach((tp, om) -> out.put(tp, om.offset()));
        return out;
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(Math.max(0, Math.min(ms, 2_000)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Override
    public void close() {
        task.stop();
    }
}
