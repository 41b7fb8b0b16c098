package io.asofconnect.sink;

import io.asofconnect.common.config.PluginVersion;
import io.asofconnect.common.logging.LogContext;
import io.asofconnect.enrich.Enrichment;
import io.asofconnect.enrich.EnrichmentMetrics;
import io.asofconnect.enrich.ReplicaLease;
import io.asofconnect.metrics.HostMetrics;
import io.asofconnect.metrics.Metered;
import io.asofconnect.replica.ReplicaMetrics;
import io.asofconnect.sink.config.ExactlyOnceJdbcSinkConfig;
import io.asofconnect.sink.enrichment.EnrichmentStage;
import io.asofconnect.writer.ExactlyOnceWriter;
import io.asofconnect.writer.OffsetStore;
import io.asofconnect.writer.PartitionState;
import io.asofconnect.writer.Revocations;
import io.asofconnect.writer.WriterRetries;
import io.asofconnect.writer.config.JdbcUrlValidator;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Writes records to Postgres with an exactly-once effect: each flush commits the rows together with the
 * next offset of every partition it covers, under the epoch this task took for the partition on
 * {@link #open}. On open the consumer is rewound to the offsets in the target, so the target, not the
 * consumer group, decides where to continue; records at or before a committed offset are dropped.
 *
 * <p>Transient database failures roll back and are retried through Connect ({@link RetriableException}
 * with {@code context.timeout}), which keeps the partitions paused and the buffer as it is, up to
 * {@code max.retries}. Any other failure is kept and thrown from every later {@code put}: nothing more is
 * written after it.
 *
 * <p>The task keeps to Connect's lifecycle and to retries: records wait in a {@link RecordBuffer} (after the
 * {@link EnrichmentStage}, when enrichment is on) until it is due, the {@link ExactlyOnceWriter} writes them, and
 * records that cannot be written go to {@link ErrantRecords}.
 */
public class ExactlyOnceJdbcSinkTask extends SinkTask {
    private static final Logger log = LoggerFactory.getLogger(ExactlyOnceJdbcSinkTask.class);
    /** "connector NAME task N", as problem lines name this task ({@link LogContext}); set in {@link #start}. */
    private String who;

    private ExactlyOnceJdbcSinkConfig config;
    private ExactlyOnceWriter writer;
    /** Where a record that cannot be written goes; made in {@link #start}. */
    private ErrantRecords errant;
    /** The records held until they are written; made in {@link #start}. */
    private RecordBuffer buffer;
    /**
     * Partitions this task had paused when they were closed. Connect keeps them in its paused set and pauses
     * them again when they are assigned again, while their new state starts unpaused: {@link #open} resumes them.
     */
    private final Set<TopicPartition> pausedWhenClosed = new HashSet<>();
    /** Marked by {@link #close} before it waits for this task's lock, so that a flush in progress cannot commit them. */
    private final Revocations revocations = new Revocations();
    private SinkMetrics metrics;
    private Metered metered;
    /** Retries of take-overs and writes, and the advice when the task gives up; made in {@link #start}. */
    private WriterRetries retries;
    private ConnectException failure;
    private final java.util.function.Function<Map<String, ?>, ReplicaLease> replicas;
    private EnrichmentStage enrichment;
    private final long openBudgetMs;

    public ExactlyOnceJdbcSinkTask() {
        this(ReplicaLease::fromRegistry);
    }

    /** With another source of replicas, for tests that feed a real version store by hand. */
    ExactlyOnceJdbcSinkTask(java.util.function.Function<Map<String, ?>, ReplicaLease> replicas) {
        this(replicas, ExactlyOnceJdbcSinkConfig.OPEN_BUDGET_MS);
    }

    /** With a shorter bound on {@link #open}, for tests of that bound. */
    ExactlyOnceJdbcSinkTask(java.util.function.Function<Map<String, ?>, ReplicaLease> replicas, long openBudgetMs) {
        this.replicas = replicas;
        this.openBudgetMs = openBudgetMs;
    }

    @Override
    public String version() {
        return PluginVersion.VERSION;
    }

    @Override
    public synchronized void start(Map<String, String> props) {
        config = new ExactlyOnceJdbcSinkConfig(props);
        who = LogContext.current(config.connectorName());
        JdbcUrlValidator.warnIfWeakTls(config.connectionUrl(), log, who);
        buffer = new RecordBuffer(config.batchSize(), config.batchLingerMs(), config.groupHeader());
        metered = new Metered(HostMetrics.orLocal(() -> context == null ? null : context.pluginMetrics()));
        metrics = new SinkMetrics(metered);
        metered.gauge("sink-buffered-records", "records buffered for the next transaction", buffer::bufferedRecords);
        if (config.groupHeader() != null) {
            metered.gauge("sink-open-group-records", "records waiting for the end of their group (changelog.group.header)",
                    buffer::openGroupRecords);
        }
        writer = ExactlyOnceWriter.create(config.writerSettings(), "asof-connect sink " + config.connectorName(), metrics);
        retries = config.writerOptions().retries(log, who, this::fail)
                .onRetry(metrics::retried)
                .targetTables(ExactlyOnceJdbcSinkConfig.TARGET_TABLES_ADVICE)
                .openBudgetMs(openBudgetMs);
        ErrantRecordReporter reporter = context == null ? null : context.errantRecordReporter();
        errant = new ErrantRecords(reporter, metrics, buffer);
        if (config.enrichmentEnabled()) {
            enrichment = startEnrichment(props);
        }
        log.info("Started sink task of connector {} ({}); bad records {}", config.connectorName(), config,
                reporter == null ? "fail the task" : "go to the errant record reporter");
    }

    private EnrichmentStage startEnrichment(Map<String, String> props) {
        EnrichmentMetrics enrichmentMetrics = new EnrichmentMetrics(metered);
        enrichmentMetrics.heldRecords(buffer::heldRecords);
        Enrichment started = Enrichment.start(props, replicas, enrichmentMetrics);
        ReplicaMetrics.publish(metered, started.lease().lookup());
        log.info("Enriching records from table {} of the replica before writing", started.config().table());
        return new EnrichmentStage(started, config.bufferMaxRecords(), errant, System::nanoTime, enrichmentMetrics);
    }

    /**
     * Takes each partition over with a new epoch, resumes the ones this task paused before they were last
     * closed, and rewinds the consumer to the offset the target holds.
     */
    @Override
    public synchronized void open(Collection<TopicPartition> assigned) {
        failIfFailed();
        if (assigned.isEmpty()) {
            return;
        }
        refuseSplitGroups(assigned);
        revocations.admit(assigned);
        Map<TopicPartition, OffsetStore.Claim> claims = retries.claim(writer, assigned);
        resumeThosePausedWhenClosed(assigned);
        Map<TopicPartition, Long> rewinds = new HashMap<>();
        claims.forEach((tp, claim) -> {
            buffer.open(tp, claim.epoch(), claim.nextOffset());
            if (claim.nextOffset() != OffsetStore.NO_OFFSET) {
                rewinds.put(tp, claim.nextOffset());
            }
        });
        if (!rewinds.isEmpty()) {
            context.offset(rewinds);
            metrics.rewound(rewinds.size());
        }
        log.info("Opened {} partitions; {} rewound to the offsets held in the target", claims.size(), rewinds.size());
    }

    /** With a group header, a group's records must all be in one partition: only single-partition topics qualify. */
    private void refuseSplitGroups(Collection<TopicPartition> assigned) {
        if (config.groupHeader() == null) {
            return;
        }
        for (TopicPartition tp : assigned) {
            if (tp.partition() != 0) {
                throw fail(new ConnectException(ExactlyOnceJdbcSinkConfig.CHANGELOG_GROUP_HEADER + " is set, but topic " + tp.topic()
                        + " has a partition " + tp.partition() + ": the records of one group (one source transaction) may be spread"
                        + " over several partitions, which no target transaction can bring together. Give the topic one"
                        + " partition (recreate it, and the view's offsets), or leave " + ExactlyOnceJdbcSinkConfig.CHANGELOG_GROUP_HEADER
                        + " empty"));
            }
        }
    }

    private void resumeThosePausedWhenClosed(Collection<TopicPartition> assigned) {
        List<TopicPartition> resume = assigned.stream().filter(pausedWhenClosed::remove).toList();
        if (!resume.isEmpty()) {
            context.resume(resume.toArray(new TopicPartition[0]));
            log.debug("Resumed {}: paused by this task when they were last closed", resume);
        }
    }

    @Override
    public synchronized void put(Collection<SinkRecord> records) {
        failIfFailed();
        try {
            buffer.add(records, enrichment, context);
        } catch (ConnectException e) {
            throw fail(e);
        }
        long now = System.nanoTime();
        buffer.recount(now);
        boolean retryDue = retries.retryPending() && buffer.hasUncommitted();
        if (buffer.due(now) || retryDue) {
            flushBuffered();
        }
        // Connect polls (and calls put) only as often as it commits offsets when partitions are paused or idle: a
        // short timeout brings the next put sooner, for the next look at the watermark or the end of the linger.
        long recheckMs = buffer.nextLookMs(System.nanoTime());
        if (recheckMs != Long.MAX_VALUE) {
            context.timeout(recheckMs);
        }
    }

    @Override
    public synchronized void flush(Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
        preCommit(currentOffsets);
    }

    /**
     * Flushes, then reports exactly what the target has committed, never more. While a failed write waits for
     * its retry, it does not write: retries are {@code put}'s redeliveries, spaced by {@code retry.backoff.ms}, and
     * offset commits in between must not use up {@code max.retries}. It does re-read the offsets rows then (a
     * read, not an attempt): a task frozen past its session learns here that it was fenced, and stops saying so,
     * even when Connect takes its partitions away before any redelivery would have told it.
     */
    @Override
    public synchronized Map<TopicPartition, OffsetAndMetadata> preCommit(Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
        if (failure == null && retries.retryPending()) {
            rereadOffsetsRows();
        } else if (failure == null) {
            try {
                flushBuffered();
            } catch (RetriableException e) {
                log.debug("Flush before offset commit deferred: {}", e.getMessage());
            } catch (ConnectException e) {
                log.debug("Flush before offset commit failed; the next put fails the task");
            }
        }
        return buffer.committedOffsets();
    }

    /** Learns from the offsets rows what the failed write committed, or that this task was fenced (it then stops). */
    private void rereadOffsetsRows() {
        if (buffer.partitions().isEmpty()) {
            return;
        }
        retries.reconcileBeforeCommit(() -> writer.reconcile(buffer.partitions()));
    }

    /**
     * Forgets revoked partitions and their buffered records: nothing more is written for them from the moment
     * close is called. Connect calls close on the task's own thread, between puts; marking the partitions before
     * taking the task's lock also keeps a flush running on any other thread from committing them (it rolls back). A partition this
     * task had paused is remembered, to be resumed if it is assigned again.
     */
    @Override
    public void close(Collection<TopicPartition> revoked) {
        revocations.revoke(revoked);
        synchronized (this) {
            if (buffer != null) {
                forget(revoked);
            }
        }
    }

    private void forget(Collection<TopicPartition> revoked) {
        int dropped = buffer.openGroupRecords(revoked);
        for (PartitionState s : buffer.remove(revoked, System.nanoTime())) {
            dropped += s.buffered().size() + s.held().size();
            if (s.paused()) {
                pausedWhenClosed.add(s.partition());
            }
        }
        log.info("Closed {} partitions; {} buffered records dropped (they are re-read by the next owner)", revoked.size(), dropped);
    }

    @Override
    public synchronized void stop() {
        if (writer != null) {
            writer.close();
        }
        if (enrichment != null) {
            enrichment.close();
            enrichment = null;
        }
        if (buffer != null) {
            buffer.clear();
        }
        pausedWhenClosed.clear();
        revocations.clear();
        log.info("Stopped sink task of connector {}", config == null ? "(not started)" : config.connectorName());
    }

    /**
     * Writes what is buffered; a transient failure rolls back and is retried by Connect ({@link WriterRetries#write}),
     * any other failure stops the task.
     */
    private void flushBuffered() {
        try {
            retries.write(() -> writer.reconcile(buffer.partitions()), () -> {
                while (!writer.flush(buffer.partitions(), errant, revocations)) {
                    // A partition began closing mid-flush: all was rolled back; the others are written again without it.
                }
            }, () -> "writing " + buffer.bufferedRecords() + " records", context);
        } finally {
            buffer.recount(System.nanoTime());
        }
    }

    private ConnectException fail(ConnectException e) {
        if (failure == null) {
            failure = e;
            writer.abandon();
            log.error("{}: the sink task stops: {}", who, e.getMessage());
        }
        return failure;
    }

    private void failIfFailed() {
        if (failure != null) {
            throw failure;
        }
    }
}
