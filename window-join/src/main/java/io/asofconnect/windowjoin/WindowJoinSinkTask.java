package io.asofconnect.windowjoin;

import io.asofconnect.common.config.PluginVersion;
import io.asofconnect.common.logging.LogContext;
import io.asofconnect.metrics.HostMetrics;
import io.asofconnect.metrics.Metered;
import io.asofconnect.windowjoin.state.Side;
import io.asofconnect.windowjoin.state.WindowStore;
import io.asofconnect.writer.ExactlyOnceWriter;
import io.asofconnect.writer.FencedException;
import io.asofconnect.writer.OffsetStore;
import io.asofconnect.writer.PartitionState;
import io.asofconnect.writer.Revocations;
import io.asofconnect.writer.SqlErrors;
import io.asofconnect.writer.WriterRetries;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Joins partition {@code p} of the left topic with partition {@code p} of the right topic, for every pair Connect
 * assigns it, and writes the rows with an exactly-once effect.
 *
 * <p>Every flush commits, in one transaction under the epochs taken in {@link #open}: the output rows, and per input
 * partition the next offset, the lowest offset still held in a window and the watermark ({@link HeldTables}). Before
 * each flush every window the watermarks have passed is closed, so the committed rows are exactly those determined by
 * the committed prefixes of the inputs. On open, and after a failed write, the task rewinds each partition to its
 * held offset and rebuilds the windows by replaying the log from there; the {@link Joiner} writes none of the rows
 * the target already holds.
 *
 * <p>Lifecycle and retries only: the join is {@link Joiner}, the state {@link WindowStore}, the rows {@link OutputRows}.
 */
public class WindowJoinSinkTask extends SinkTask {
    private static final Logger log = LoggerFactory.getLogger(WindowJoinSinkTask.class);

    private JoinConfig config;
    private String who;
    private ExactlyOnceWriter writer;
    /** Take-overs retried as the sink retries them, with its messages. */
    private WriterRetries retries;
    private HeldTables held;
    /** Replaced, not emptied, when every pair leaves; read by the metrics reporter's thread. */
    private volatile WindowStore store;
    private Joiner joiner;
    private JoinWindow window;
    private JoinMetrics metrics;
    private final Map<Side, SideReader> readers = new HashMap<>();
    private final Map<Integer, PairState> pairs = new LinkedHashMap<>();
    private final Map<TopicPartition, SideState> sides = new HashMap<>();
    private final Revocations revocations = new Revocations();
    private long lastFlushNanos;
    private int sinceFlush;
    private int failedAttempts;
    /** A write failed for a transient reason: records are ignored until the state is rebuilt, at {@link #retryAtNanos}. */
    private boolean rebuildPending;
    private long retryAtNanos;
    /** Moves idle partitions' watermarks on ({@link IdleRule}). */
    private IdleRule idle;
    private RefusedRecords refused;
    /** Published by each flush: the metrics reporter reads it from another thread. */
    private volatile long taskWatermark = Long.MIN_VALUE;
    private ConnectException failure;

    @Override
    public String version() {
        return PluginVersion.VERSION;
    }

    @Override
    public synchronized void start(Map<String, String> props) {
        config = new JoinConfig(props);
        who = LogContext.current(config.connectorName());
        Metered metered = new Metered(HostMetrics.orLocal(() -> context == null ? null : context.pluginMetrics()));
        metrics = new JoinMetrics(metered);
        window = config.window();
        held = new HeldTables(config.writer().tableSchema(), config.heldTable(), config.lateTable(), config.connectorName(), sides::get);
        writer = ExactlyOnceWriter.create(config.writerSettings(), "asof-connect window join " + config.connectorName(), metrics, held);
        retries = config.writer().retries(log, who, this::fail).onRetry(metrics::retried)
                .targetTables(config.outputTable() + ", " + config.heldTable() + " and " + config.lateTable());
        store = newStore();
        metered.gauge("join-held-records", "records held in open windows", () -> store.size());
        metered.gauge("join-state-bytes", "size of the window state file", () -> store.fileBytes());
        metered.gauge("join-watermark", "the least watermark over this task's partitions (epoch ms)", () -> taskWatermark);
        joiner = newJoiner();
        for (Side side : Side.values()) {
            readers.put(side, new SideReader(config.keys(side), config.times(side), config.topic(side)));
        }
        ErrantRecordReporter reporter = context == null ? null : context.errantRecordReporter();
        refused = new RefusedRecords(config.latePolicy(), window.latenessMs(), metrics, reporter, who);
        idle = new IdleRule(config.idleTimeoutMs(), window);
        lastFlushNanos = System.nanoTime();
        log.info("Started window join task of connector {} ({})", config.connectorName(), config);
    }

    private Joiner newJoiner() {
        return new Joiner(store, window, config.type(), new OutputRows(config.topic(Side.LEFT), config.prefix(Side.LEFT), config.prefix(Side.RIGHT)));
    }

    private WindowStore newStore() {
        try {
            return WindowStore.create(config.statePath(), config.connectorName());
        } catch (IOException e) {
            throw new ConnectException("cannot create the window state under " + JoinConfig.STATE_PATH + "=" + config.statePath()
                    + " (" + e.getMessage() + "); point it at a writable local directory", e);
        }
    }

    /**
     * Takes each pair over with new epochs, reads its held offsets, watermarks and late records, and rewinds both
     * partitions to where the window state must be rebuilt from.
     */
    @Override
    public synchronized void open(Collection<TopicPartition> assigned) {
        failIfFailed();
        if (assigned.isEmpty()) {
            return;
        }
        Set<TopicPartition> all = new HashSet<>(sides.keySet());
        all.addAll(assigned);
        for (TopicPartition tp : assigned) {
            TopicPartition twin = twin(tp);
            if (!all.contains(twin)) {
                throw fail(new ConnectException("partition " + tp + " was assigned to this task without " + twin + ": the join needs"
                        + " partition p of both topics in the same task. Use the consumer's default range assignor (remove"
                        + " consumer.override.partition.assignment.strategy) and give both topics the same partition count"));
            }
        }
        revocations.admit(assigned);
        Map<TopicPartition, OffsetStore.Claim> claims = retries.claim(writer, assigned);
        Map<TopicPartition, Long> rewinds = build(claims);
        if (!rewinds.isEmpty()) {
            context.offset(rewinds);
        }
        // A partition this task held back while its twin replayed stays paused in Connect across a reassignment.
        context.resume(assigned.toArray(new TopicPartition[0]));
        log.info("Opened {} partitions ({} pairs); {} rewound to rebuild their windows", assigned.size(), claims.size() / 2, rewinds.size());
    }

    private TopicPartition twin(TopicPartition tp) {
        Side side = sideOf(tp);
        return new TopicPartition(config.topic(side.other()), tp.partition());
    }

    private Side sideOf(TopicPartition tp) {
        return tp.topic().equals(config.topic(Side.LEFT)) ? Side.LEFT : Side.RIGHT;
    }

    /** Fresh state for the claimed partitions' pairs; returns where to rewind each partition. */
    private Map<TopicPartition, Long> build(Map<TopicPartition, OffsetStore.Claim> claims) {
        long now = System.nanoTime();
        Map<TopicPartition, Long> rewinds = new HashMap<>();
        Set<Integer> rebuilt = new HashSet<>();
        claims.forEach((tp, claim) -> {
            HeldTables.Held h = held.lastRead(tp);
            long low = h == HeldTables.Held.NONE ? claim.nextOffset() : Math.min(h.lowOffset(), claim.nextOffset() == OffsetStore.NO_OFFSET ? Long.MAX_VALUE : claim.nextOffset());
            SideState s = new SideState(sideOf(tp), new PartitionState(tp, claim.epoch(), claim.nextOffset()), low, h.watermark(), h.late(), now);
            sides.put(tp, s);
            if (low != OffsetStore.NO_OFFSET) {
                rewinds.put(tp, low);
            }
            rebuilt.add(tp.partition());
        });
        for (int p : rebuilt) {
            store.clear(p);
            PairState pair = new PairState(p, sides.get(new TopicPartition(config.topic(Side.LEFT), p)),
                    sides.get(new TopicPartition(config.topic(Side.RIGHT), p)));
            pairs.put(p, pair);
            if (!pair.live()) {
                pair.startRebuild(now);
            }
        }
        metrics.rebuilt(rebuilt.size());
        return rewinds;
    }

    @Override
    public synchronized void put(Collection<SinkRecord> records) {
        failIfFailed();
        long now = System.nanoTime();
        if (rebuildPending) {
            if (now < retryAtNanos || !rebuild()) {
                context.timeout(Math.max(1L, TimeUnit.NANOSECONDS.toMillis(retryAtNanos - now)));
                return;
            }
            // The records of this batch were read before the rewind: the consumer reads them again.
            return;
        }
        try {
            for (SinkRecord r : records) {
                take(r, now);
            }
        } catch (ConnectException e) {
            throw fail(e);
        }
        sinceFlush += records.size();
        if (sinceFlush >= config.writer().batchSize()
                || now - lastFlushNanos >= TimeUnit.MILLISECONDS.toNanos(config.writer().batchLingerMs())) {
            flushAll();
        }
        // Connect calls put as often as it polls; idle partitions and waiting windows need a look even without records.
        context.timeout(Math.max(10L, Math.min(config.writer().batchLingerMs(), config.idleTimeoutMs() / 4)));
    }

    private void take(SinkRecord r, long now) {
        TopicPartition tp = PartitionState.partitionOf(r);
        SideState s = sides.get(tp);
        if (s == null || revocations.isRevoked(tp)) {
            return;
        }
        long offset = r.originalKafkaOffset();
        if (s.rewoundTo >= 0) {
            // Records of the batch that was read before the rewind: the consumer reads them again from there.
            if (offset != s.rewoundTo) {
                return;
            }
            s.rewoundTo = -1;
        }
        boolean replay = s.isReplay(offset);
        if (replay ? offset < s.low : !s.writer.isNew(r)) {
            return;
        }
        if (replay && s.expectFirst >= 0) {
            if (offset > s.expectFirst) {
                throw new ConnectException("the window state of " + tp + " must be rebuilt from offset " + s.expectFirst
                        + ", but the log now starts at " + offset + ": retention deleted records still held in a window."
                        + " Raise retention.ms of " + tp.topic() + " well above the window plus the allowed lateness, then"
                        + " reset this connector's offsets");
            }
            s.expectFirst = -1;
        }
        if (replay && offset >= s.replayNext - 1) {
            s.caughtUp = true;
        }
        s.lastRecordNanos = now;
        PairState pair = pairs.get(tp.partition());
        if (!replay && !pair.live()) {
            holdUntilRebuilt(s, tp, offset);
            return;
        }
        SideReader reader = readers.get(s.side);
        SideReader.Read read;
        try {
            read = reader.read(r);
        } catch (DataException e) {
            if (!replay) {
                refused.bad(r, reader.where(r), e);
                s.writer.skip(r);
            }
            return;
        }
        Joiner.Outcome outcome = joiner.add(pair, s.side, offset, read.key(), read.time(), read.value());
        if (outcome == Joiner.Outcome.LATE) {
            refused.late(r, reader.where(r), s, read.time());
        }
        if (!replay) {
            s.writer.skip(r);
        }
        idle.seen(read.time(), now);
        endRebuildIfLive(pair, now);
    }

    /**
     * A new record on a partition whose twin is still replaying: it must wait. Its matches with the twin's records
     * not replayed yet are not known, and once its offset is committed a later rebuild would take those matches for
     * written. The partition has replayed all it had to; it is paused and, when the pair is live, rewound to its
     * first new record.
     */
    private void holdUntilRebuilt(SideState s, TopicPartition tp, long offset) {
        s.caughtUp = true;
        s.expectFirst = -1;
        if (s.heldBackFrom < 0) {
            s.heldBackFrom = offset;
            context.pause(tp);
        }
    }

    private void endRebuildIfLive(PairState pair, long now) {
        if (pair.rebuildDone()) {
            long ms = pair.finishRebuild(now);
            for (SideState s : List.of(pair.left, pair.right)) {
                if (s.heldBackFrom >= 0) {
                    context.offset(s.writer.partition(), s.heldBackFrom);
                    context.resume(s.writer.partition());
                    s.rewoundTo = s.heldBackFrom;
                    s.heldBackFrom = -1;
                }
            }
            metrics.replayed(ms);
            log.info("Rebuilt the windows of partition {} of {} and {}", pair.partition, config.topic(Side.LEFT), config.topic(Side.RIGHT));
        }
    }

    private long leastWatermark() {
        long w = Long.MAX_VALUE;
        for (SideState s : sides.values()) {
            w = Math.min(w, s.watermark);
        }
        return w == Long.MAX_VALUE ? Long.MIN_VALUE : w;
    }

    @Override
    public synchronized Map<TopicPartition, OffsetAndMetadata> preCommit(Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
        if (failure == null && !rebuildPending) {
            try {
                flushAll();
            } catch (ConnectException e) {
                log.debug("Flush before offset commit failed; the next put fails the task");
            }
        }
        Map<TopicPartition, OffsetAndMetadata> committed = new HashMap<>();
        for (SideState s : sides.values()) {
            if (s.writer.committedNext() != OffsetStore.NO_OFFSET) {
                committed.put(s.writer.partition(), new OffsetAndMetadata(s.writer.committedNext()));
            }
        }
        return committed;
    }

    /** Closes every window the watermarks have passed, then commits rows, offsets, held offsets and watermarks together. */
    private void flushAll() {
        long now = System.nanoTime();
        for (PairState pair : pairs.values()) {
            if (!pair.live()) {
                for (SideState s : idle.endIdleReplays(pair, now)) {
                    log.warn("{}: partition {} received nothing to replay for {} ms; it continues live", who,
                            s.writer.partition(), config.idleTimeoutMs());
                }
                endRebuildIfLive(pair, now);
            }
        }
        idle.advance(sides.values(), pairs.values(), now);
        for (PairState pair : pairs.values()) {
            joiner.closeWindows(pair);
        }
        taskWatermark = leastWatermark();
        List<PartitionState> states = new ArrayList<>();
        boolean any = false;
        for (SideState s : sides.values()) {
            states.add(s.writer);
            any |= s.writer.hasUncommitted();
        }
        if (!any) {
            lastFlushNanos = now;
            sinceFlush = 0;
            return;
        }
        // Every partition's held offset and watermark go with every commit: a rebuild relies on the other side's.
        states.forEach(PartitionState::markChanged);
        try {
            while (!writer.flush(states, this::badRow, revocations)) {
                // A partition began closing mid-flush: all was rolled back; the others are written again without it.
            }
            held.committed();
            failedAttempts = 0;
            lastFlushNanos = System.nanoTime();
            sinceFlush = 0;
        } catch (FencedException e) {
            throw fail(e);
        } catch (SQLException e) {
            recover(e);
        }
    }

    private void badRow(SinkRecord row, DataException reason) {
        throw new ConnectException("the join's output row " + OutputRows.describe(row) + " cannot be written to "
                + config.outputTable() + " (" + reason.getMessage() + "); check that the table's columns fit both inputs'"
                + " fields, or let schema.evolution=BASIC create it");
    }

    /** A write failed: retry a transient failure by rebuilding from the log, after the backoff; fail on anything else. */
    private void recover(SQLException e) {
        writer.abandon();
        if (SqlErrors.classify(e) != SqlErrors.Kind.TRANSIENT || failedAttempts >= config.writer().maxRetries()) {
            throw fail(new ConnectException("writing the join's rows failed (" + SqlErrors.describe(e) + ") after "
                    + failedAttempts + " retries; nothing of the failed write was committed. Fix the cause and restart the"
                    + " task: it continues from what the target holds", e));
        }
        failedAttempts++;
        metrics.retried();
        rebuildPending = true;
        retryAtNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(config.writer().retryBackoffMs());
        log.warn("{}: writing to the target failed ({}); rolled back, rebuilding the windows from the log in {} ms (retry {} of {})",
                who, SqlErrors.describe(e), config.writer().retryBackoffMs(), failedAttempts, config.writer().maxRetries());
    }

    /**
     * After a failed write nobody knows which of the task's state the target holds (a flush that moved no offset
     * cannot be told from the offsets rows), so the task takes its partitions over again and rebuilds them: always right.
     */
    private boolean rebuild() {
        List<TopicPartition> owned = new ArrayList<>(sides.keySet());
        try {
            Map<TopicPartition, OffsetStore.Claim> claims = writer.claim(owned, retries.openBudgetMs());
            sides.clear();
            pairs.clear();
            Map<TopicPartition, Long> rewinds = build(claims);
            context.offset(rewinds);
            context.resume(owned.toArray(new TopicPartition[0]));
            rebuildPending = false;
            log.info("Rebuilding the windows of {} partitions after a failed write", owned.size());
            return true;
        } catch (SQLException e) {
            recover(e);
            return false;
        }
    }

    @Override
    public void close(Collection<TopicPartition> revoked) {
        revocations.revoke(revoked);
        synchronized (this) {
            Set<Integer> gone = new HashSet<>();
            for (TopicPartition tp : revoked) {
                if (sides.remove(tp) != null) {
                    gone.add(tp.partition());
                }
            }
            for (int p : gone) {
                TopicPartition left = new TopicPartition(config.topic(Side.LEFT), p);
                TopicPartition right = new TopicPartition(config.topic(Side.RIGHT), p);
                if (!(revoked.contains(left) && revoked.contains(right)) && failure == null) {
                    // Half a pair cannot be flushed alone, and Connect will not open the remaining half again.
                    fail(new ConnectException("Connect took " + (revoked.contains(left) ? left : right) + " from this task but"
                            + " left it " + (revoked.contains(left) ? right : left) + ": the join needs both partitions of a pair"
                            + " together. Use the consumer's default (eager range) assignment; restart the task to rebuild"));
                }
                sides.remove(new TopicPartition(config.topic(Side.LEFT), p));
                sides.remove(new TopicPartition(config.topic(Side.RIGHT), p));
                pairs.remove(p);
                if (store != null && !pairs.isEmpty()) {
                    store.clear(p);
                }
            }
            if (store != null && pairs.isEmpty() && !gone.isEmpty()) {
                // Every pair left (an eager rebalance revokes all): a new empty file is far cheaper than deleting
                // the held records one by one.
                store.close();
                store = newStore();
                joiner = newJoiner();
            }
            log.info("Closed {} partitions ({} pairs); their windows are rebuilt by the next owner", revoked.size(), gone.size());
        }
    }

    @Override
    public synchronized void stop() {
        if (writer != null) {
            writer.close();
        }
        if (store != null) {
            store.close();
        }
        sides.clear();
        pairs.clear();
        revocations.clear();
        log.info("Stopped window join task of connector {}", config == null ? "(not started)" : config.connectorName());
    }

    private ConnectException fail(ConnectException e) {
        if (failure == null) {
            failure = e;
            if (writer != null) {
                writer.abandon();
            }
            log.error("{}: the window join task stops: {}", who, e.getMessage());
        }
        return failure;
    }

    private void failIfFailed() {
        if (failure != null) {
            throw failure;
        }
    }
}
