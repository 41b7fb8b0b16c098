package io.asofconnect.sink.enrichment;

import io.asofconnect.enrich.EnrichOutcome;
import io.asofconnect.enrich.Enrichment;
import io.asofconnect.enrich.EnrichmentEngine;
import io.asofconnect.enrich.EnrichmentMetrics;
import io.asofconnect.writer.BatchWriter;
import io.asofconnect.writer.PartitionState;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTaskContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.function.LongSupplier;

/**
 * Runs records through the enrichment engine before they are buffered, without ever blocking the task: a
 * record the replica cannot answer yet (its event time, or the time it reached the task, is past the replica's
 * watermark) is held, with every later record of its partition (order is kept), and asked again on later
 * {@code put} calls; after {@code enrich.lateness.wait.ms} (while the replica has not caught up since the task
 * started: {@code enrich.startup.wait.ms}) the engine's late policy decides. A partition
 * holding {@code buffer.max.records} is paused until it drains.
 */
public final class EnrichmentStage implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(EnrichmentStage.class);

    private final Enrichment enrichment;
    private final EnrichmentEngine engine;
    private final int maxHeld;
    private final BatchWriter.BadRecordHandler errant;
    private final LongSupplier nanoClock;
    private final EnrichmentMetrics metrics;

    public EnrichmentStage(Enrichment enrichment, int maxHeld, BatchWriter.BadRecordHandler errant, LongSupplier nanoClock,
                    EnrichmentMetrics metrics) {
        this.enrichment = enrichment;
        this.engine = enrichment.engine();
        this.maxHeld = maxHeld;
        this.errant = errant;
        this.nanoClock = nanoClock;
        this.metrics = metrics;
    }

    /**
     * The read-your-writes bound of the records of one {@code put}: Connect had received all of them when it
     * called it, so one reading of the clock serves the whole batch.
     */
    public long receivedNow() {
        return engine.receipts().now();
    }

    /**
     * A new record of this partition, received at {@code receivedAt} ({@link #receivedNow()}): enriched now if it
     * can be, otherwise held behind the ones already held.
     */
    public void offer(PartitionState s, SinkRecord r, long receivedAt) {
        long bound = engine.receipts().of(r, receivedAt);
        if (!s.held().isEmpty() || !apply(s, r, engine.tryEnrich(r, bound))) {
            // The bound is fixed when the hold starts: a record held through the replica's start-up keeps the
            // start-up bound even if the replica catches up just before the record's own time.
            s.hold(r, nanoClock.getAsLong(), engine.waitBoundMs() * 1_000_000L, bound);
        }
    }

    /** Asks again for the held records, oldest first, and pauses or resumes the partition. */
    public void retry(PartitionState s, SinkTaskContext context) {
        while (!s.held().isEmpty()) {
            PartitionState.Held head = s.held().peekFirst();
            EnrichOutcome<SinkRecord> outcome = engine.tryEnrich(head.record(), head.receivedAt());
            if (outcome instanceof EnrichOutcome.NotYetVisible<SinkRecord>) {
                if (nanoClock.getAsLong() - head.sinceNanos() < head.waitNanos()) {
                    break;
                }
                outcome = engine.resolveLate(head.record(), head.receivedAt());
                metrics.late();
            }
            s.held().pollFirst();
            metrics.released(nanoClock.getAsLong() - head.sinceNanos());
            if (!apply(s, head.record(), outcome)) {
                throw new IllegalStateException("the enrichment engine answered NotYetVisible to resolveLate");
            }
        }
        if (!s.paused() && s.held().size() >= maxHeld) {
            context.pause(s.partition());
            s.paused(true);
            log.debug("Paused {}: {} records wait for the replica's watermark", s.partition(), s.held().size());
        } else if (s.paused() && s.held().size() < maxHeld) {
            context.resume(s.partition());
            s.paused(false);
            log.debug("Resumed {}", s.partition());
        }
    }

    /** False when the record cannot be answered yet. */
    private boolean apply(PartitionState s, SinkRecord original, EnrichOutcome<SinkRecord> outcome) {
        if (outcome instanceof EnrichOutcome.Enriched<SinkRecord> e) {
            s.accept(e.record());
        } else if (outcome instanceof EnrichOutcome.Dropped<SinkRecord>) {
            s.skip(original);
        } else if (outcome instanceof EnrichOutcome.Failed<SinkRecord> f) {
            errant.onBadRecord(original, f.reason());
            s.skip(original);
        } else {
            return false;
        }
        return true;
    }

    @Override
    public void close() {
        try {
            enrichment.close();
        } catch (RuntimeException e) {
            // The engine's close only clears its caches: what fails here is giving the replica back.
            log.warn("{}: releasing the replica failed ({}); if the replica keeps its slot active with no task"
                    + " using it, restart the worker", engine.who(), e.toString());
        }
    }
}
