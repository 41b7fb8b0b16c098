package io.asofconnect.sink;

import io.asofconnect.writer.BatchWriter;
import io.asofconnect.writer.PartitionState;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Before the offset moves past a record that cannot be written (the writer's or the enrichment's verdict): report it
 * to Connect's errant record reporter and wait until it is taken, or, without a reporter, stop the task. A record
 * already reported since its partition's last commit (the flush that reported it was rolled back and is being
 * retried) is not reported again.
 */
final class ErrantRecords implements BatchWriter.BadRecordHandler {
    private static final Logger log = LoggerFactory.getLogger(ErrantRecords.class);
    private static final long REPORT_TIMEOUT_MS = 60_000L;

    private final ErrantRecordReporter reporter;
    private final SinkMetrics metrics;
    private final RecordBuffer buffer;

    /** {@code reporter} is null when the worker has none for this task (errors.tolerance=none). */
    ErrantRecords(ErrantRecordReporter reporter, SinkMetrics metrics, RecordBuffer buffer) {
        this.reporter = reporter;
        this.metrics = metrics;
        this.buffer = buffer;
    }

    @Override
    public void onBadRecord(SinkRecord r, DataException reason) {
        String where = r.originalTopic() + "-" + r.originalKafkaPartition() + "@" + r.originalKafkaOffset();
        PartitionState state = buffer.stateOf(r);
        if (state != null && state.wasReported(r.originalKafkaOffset())) {
            log.debug("The record at {} was already reported as errant by a flush now retried", where);
            return;
        }
        if (reporter == null) {
            throw new ConnectException("the record at " + where + " cannot be written: " + reason.getMessage()
                    + ". The task stops and its offset stays before this record. Fix the data or the table, or set"
                    + " errors.tolerance=all with errors.deadletterqueue.topic.name to divert such records");
        }
        try {
            reporter.report(r, reason).get(REPORT_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            metrics.deadLettered();
            if (state != null) {
                state.reported(r.originalKafkaOffset());
            }
            log.debug("Reported the record at {} as errant", where);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConnectException("interrupted while reporting the errant record at " + where);
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            throw new ConnectException("the errant record reporter did not take the record at " + where + " within "
                    + REPORT_TIMEOUT_MS + " ms; the task stops and its offset stays before this record", e);
        }
    }
}
