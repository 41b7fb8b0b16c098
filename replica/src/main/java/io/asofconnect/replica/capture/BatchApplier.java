package io.asofconnect.replica.capture;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.store.VersionStore;
import io.asofconnect.replica.watermark.WatermarkTracker;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The engine's batch consumer: applies a batch's row changes to the store and, once enough has been applied
 * ({@link CommitPolicy}), records the source offsets and the watermark the probes reached and commits all of
 * it at once; only then does it tell the engine that the records the commit holds are processed (which lets
 * it flush the LSN to the server), and only then is the watermark published to lookups. So neither the
 * server's confirmed LSN nor the watermark ever passes the committed store. A crash before the commit
 * replays the uncommitted batches from the committed offsets; replays are absorbed because a version is
 * keyed by its source position. Lookups may see the uncommitted versions meanwhile (the store's contract),
 * never a watermark that covers a change not yet in the store.
 *
 * <p>A batch's committed offset stops before a trailing run of streamed row changes that share one LSN. Several
 * changes carry the same LSN when one WAL record holds many rows (COPY and other heap multi-inserts write one
 * record per page of rows), and Debezium 3.6.1 resumes strictly after the stored LSN, so an offset taken from
 * inside such a run would skip the rest of the run on restart: debezium/dbz#1554, fixed upstream later with an
 * {@code lsn_events_processed} offset field that 3.6.1 does not have. The run's versions are still written;
 * its offset is committed by a later batch, once a record with another LSN shows the run has ended, and a
 * replay of the run is absorbed. The held-back records are not reported processed either, so the LSN the
 * engine confirms to the server never passes the committed offset.
 *
 * <p>Called by the engine's one thread; {@link #discardPending} only once that thread has stopped.
 */
public final class BatchApplier implements DebeziumEngine.ChangeConsumer<RecordChangeEvent<SourceRecord>> {
    private static final Logger LOG = LoggerFactory.getLogger(BatchApplier.class);
    /** Meta key: set while the history start still has to be raised to the first watermark after a snapshot. */
    public static final String META_HISTORY_START_PENDING = "replica.history.start.pending";
    /** Meta key: the latest time at which the snapshot read a row (its source {@code ts_ms}). */
    static final String META_SNAPSHOT_READ_UNTIL = "replica.snapshot.read.until";

    private final String replicaName;
    private final VersionStore store;
    private final WatermarkTracker tracker;
    private final ChangeEventMapper mapper;
    private final OffsetCodec offsets;
    private final CommitPolicy policy;
    private final String probePrefix;
    private final long safetyMarginMs;
    private final long retentionMs;
    private final LongSupplier clock;
    private final long pruneEveryMs;
    private final SameLsnOrdinals ordinals = new SameLsnOrdinals();
    /** Tables whose key is configured in replica.key.columns rather than their primary key. */
    private final Set<String> keyColumnTables;
    private final PendingCommit pending = new PendingCommit();
    private long lastPrune;
    private long lastCommit;
    private long snapshotRecords;
    private long changeRecords;
    private final ReplicaStats stats;
    private final Supplier<String> who;
    private final SnapshotProgress progress;
    /** {@link #snapshotRecords} and {@link #changeRecords} as of the last commit, told to {@link #stats}. */
    private long committedSnapshotRecords;
    private long committedChangeRecords;
    /** The LSN of the run the previous batch held back, or null: a batch may begin with the rest of that run. */
    private Long heldBackLsn;
    /** {@link #heldBackLsn} as of the last commit: where a replay after a discard starts. */
    private Long committedHeldBackLsn;
    /** Told when a probe can first move the watermark past a snapshot that just became durable. */
    private final LongConsumer probeWanted;
    /** The row events of the current batch, by index (null for other records); reused across batches. */
    private RowEvent[] events = new RowEvent[0];

    public BatchApplier(ReplicaConfig config, VersionStore store, WatermarkTracker tracker, OffsetCodec offsets, LongSupplier clock) {
        this(config, store, tracker, offsets, clock, new ReplicaStats(), () -> "Replica " + config.name(), at -> {
        });
    }

    /**
     * @param stats told what each commit made durable
     * @param who   how problem lines name the replica and the tasks using it
     * @param probeWanted told, once the commit that ends an initial snapshot is durable, the earliest local time
     *                    a probe can be stamped at and still move the watermark past that snapshot (see
     *                    {@link #publishable}); 0 when any probe will do
     */
    public BatchApplier(ReplicaConfig config, VersionStore store, WatermarkTracker tracker, OffsetCodec offsets, LongSupplier clock,
                        ReplicaStats stats, Supplier<String> who, LongConsumer probeWanted) {
        this.probeWanted = probeWanted;
        this.stats = stats;
        this.who = who;
        this.progress = new SnapshotProgress(config.name(), stats, clock);
        this.replicaName = config.name();
        this.store = store;
        this.tracker = tracker;
        this.mapper = new ChangeEventMapper(config);
        this.offsets = offsets;
        this.policy = CommitPolicy.of(config);
        this.keyColumnTables = Set.copyOf(config.keyColumns().keySet());
        this.probePrefix = ProbeMessage.prefixFor(config.name());
        this.safetyMarginMs = config.watermarkSafetyMarginMs();
        this.retentionMs = config.historyRetentionMs();
        this.clock = clock;
        this.pruneEveryMs = pruneInterval(retentionMs);
        // The first prune comes within a minute of start, so a worker restarted more often than the interval still prunes.
        this.lastPrune = clock.getAsLong() - pruneEveryMs + Math.min(pruneEveryMs, 60_000);
        this.lastCommit = clock.getAsLong();
    }

    @Override
    public void handleBatch(List<RecordChangeEvent<SourceRecord>> records, DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer)
            throws InterruptedException {
        int n = records.size();
        RowEvent[] rows = rowEvents(records);
        HeldBack held = heldBack(rows, records);
        int settled = held.settled();
        ordinals.reset();
        boolean snapshotEnded = false;
        try {
            for (int i = 0; i < n; i++) {
                RowEvent e = rows[i];
                if (e != null) {
                    if (e.snapshot()) {
                        checkSnapshotRun(e);
                        snapshotEnded |= i < settled && isLastSnapshotRecord(e.record());
                    }
                    pending.snapshotRead = Math.max(pending.snapshotRead, apply(e));
                } else {
                    ProbeMessage.Probe probe = probe(records.get(i).record());
                    if (probe != null) {
                        pending.watermark = Math.max(pending.watermark, probe.stamp() - safetyMarginMs);
                        if (probe.instance() == tracker.instance()) {
                            pending.receiptToken = Math.max(pending.receiptToken, probe.token());
                        }
                    }
                }
                if (i < settled) {
                    pending.settle(records.get(i));
                }
            }
            pending.records += n;
            heldBackLsn = held.lsn();
            long now = clock.getAsLong();
            boolean watermarkAdvanced = pending.watermark > Math.max(store.watermark(), tracker.get())
                    || tracker.wouldRaiseReceipts(pending.receiptToken);
            if (policy.due(pending.records, now - lastCommit, watermarkAdvanced, snapshotEnded)) {
                commit(committer, now);
                if (snapshotEnded) {
                    long readUntil = snapshotReadUntil();
                    // A probe counts for its time less the margin, and publishable() wants that past the last read.
                    probeWanted.accept(readUntil == Long.MIN_VALUE ? 0 : readUntil + safetyMarginMs + 1);
                }
            }
        } catch (RuntimeException e) {
            discardPending();
            throw e;
        } finally {
            Arrays.fill(rows, 0, n, null);
        }
        committer.markBatchFinished();
    }

    /**
     * Forgets every write since the last commit: the store's and what this consumer owed it. For a batch that
     * failed, and for the replica before it restarts the engine or closes, so that a commit made afterwards
     * (the restart's own) cannot make uncommitted versions durable without their offsets.
     */
    public void discardPending() {
        store.rollback();
        pending.clear();
        heldBackLsn = committedHeldBackLsn;
        // What was rolled back was never made durable: the metrics do not count it.
        committedSnapshotRecords = snapshotRecords;
        committedChangeRecords = changeRecords;
    }

    private void commit(DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer, long now)
            throws InterruptedException {
        for (Map.Entry<Map<String, ?>, Map<String, ?>> e : pending.offsets().entrySet()) {
            store.putOffset(offsets.key(e.getKey()), offsets.value(e.getValue()));
        }
        if (pending.snapshotRead != Long.MIN_VALUE && pending.snapshotRead > snapshotReadUntil()) {
            store.setMeta(META_SNAPSHOT_READ_UNTIL, Long.toString(pending.snapshotRead));
        }
        long watermark = Math.max(store.watermark(), pending.watermark);
        if (watermark > store.watermark()) {
            watermark = publishable(watermark);
            if (watermark > store.watermark()) {
                store.setWatermark(watermark);
            }
        }
        maybePrune(watermark, now);
        store.commit();
        long snapshotDelta = snapshotRecords - committedSnapshotRecords;
        stats.committed(snapshotDelta, changeRecords - committedChangeRecords);
        committedSnapshotRecords = snapshotRecords;
        committedChangeRecords = changeRecords;
        if (snapshotDelta > 0) {
            progress.stored();
        }
        lastCommit = now;
        committedHeldBackLsn = heldBackLsn;
        tracker.advanceTo(watermark);
        if (!historyStartPending()) {
            // Everything before this replica's probes is now in the committed store. While a snapshot's history
            // has not started, nothing is answerable anyway; the probe that starts it raises both.
            tracker.advanceReceiptsTo(pending.receiptToken);
        }
        for (RecordChangeEvent<SourceRecord> r : pending.settled()) {
            committer.markProcessed(r);
        }
        pending.clear();
    }

    /** Reads each record's row change once, for both the held-back scan and the apply loop. */
    private RowEvent[] rowEvents(List<RecordChangeEvent<SourceRecord>> records) {
        if (events.length < records.size()) {
            events = new RowEvent[Math.max(records.size(), 2 * events.length)];
        }
        for (int i = 0; i < records.size(); i++) {
            events[i] = mapper.read(records.get(i).record());
        }
        return events;
    }

    /**
     * Debezium retries a failed snapshot inside its task, with no engine failure that the replica's restart
     * would see: the rows of the new run arrive with another snapshot LSN than the rows applied before, which
     * the store holds uncommitted or its committed offsets stop inside of. The new run must not be applied on
     * top of the old run's rows (a row deleted in between would outlive its deletion), so the batch fails the
     * engine and the replica's restart starts the store over.
     */
    private void checkSnapshotRun(RowEvent e) {
        if (pending.snapshotLsn != null) {
            // Every row, by its source LSN (already read): a batch may hold the end of one run and the start of the next.
            if (!pending.snapshotLsn.equals(e.lsn())) {
                throw snapshotRetried();
            }
            return;
        }
        Long lsn = offsetLsn(e.record());
        // The first snapshot row since the last commit: compare with the committed offsets, if they stop inside a snapshot.
        if (GapDetector.snapshotIncomplete(offsets, store)) {
            boolean sameRun = store.offsets().values().stream().map(offsets::decodeValue)
                    .anyMatch(m -> m != null && lsn != null && lsn.toString().equals(String.valueOf(m.get("lsn"))));
            if (!sameRun) {
                throw snapshotRetried();
            }
        }
        pending.snapshotLsn = e.lsn();
    }

    private ConnectException snapshotRetried() {
        return new ConnectException("replica '" + replicaName + "': the initial snapshot was interrupted and"
                + " is being taken again; restarting the capture with an empty store so that rows of the"
                + " interrupted run cannot outlive their deletion");
    }

    private static boolean isLastSnapshotRecord(SourceRecord r) {
        return r.sourceOffset() != null && Boolean.TRUE.equals(r.sourceOffset().get("last_snapshot_record"));
    }

    /**
     * Which leading records of the batch may have their offsets committed: all but a trailing run of records
     * sharing one LSN if that run holds a streamed row change, or continues the run the previous batch held back
     * (a heartbeat repeats the offset of the last change it saw). Records without an LSN belong to the run around
     * them. Snapshot rows all share the snapshot's LSN and are committed as they come, as are other records.
     */
    private HeldBack heldBack(RowEvent[] rows, List<RecordChangeEvent<SourceRecord>> records) {
        int start = records.size();
        Long runLsn = null;
        boolean rowRun = false;
        while (start > 0) {
            SourceRecord r = records.get(start - 1).record();
            Long lsn = offsetLsn(r);
            if (lsn != null && runLsn != null && !lsn.equals(runLsn)) {
                break;
            }
            if (lsn != null) {
                runLsn = lsn;
            }
            RowEvent e = rows[start - 1];
            rowRun |= e != null && !e.snapshot();
            start--;
        }
        if (start == 0 && runLsn != null && runLsn.equals(heldBackLsn)) {
            rowRun = true;
        }
        return rowRun ? new HeldBack(start, runLsn) : new HeldBack(records.size(), null);
    }

    /** The first {@code settled} records of a batch may be committed; the rest share {@code lsn} (null when none are held back). */
    private record HeldBack(int settled, Long lsn) {
    }

    /** The LSN in a record's source offset, or null. */
    private static Long offsetLsn(SourceRecord r) {
        return r.sourceOffset() != null && r.sourceOffset().get("lsn") instanceof Number n ? n.longValue() : null;
    }

    /**
     * The watermark to publish for {@code candidate}: itself, except while the history start is pending after a
     * snapshot. Rows of a snapshot taken now reflect the source as of its reads, so the history cannot start
     * before the last read; and a history that starts above the published watermark leaves times at or below
     * the watermark that are neither answerable nor ever will be, which readers would take for pruned history.
     * So the watermark stays where it was until a probe reaches past the snapshot's last read, and then the
     * history starts at that very watermark: from then on the history start is never above the watermark, and
     * every time past the watermark is one the history will cover (readers hold it, never fail it).
     */
    private long publishable(long candidate) {
        if (!historyStartPending()) {
            return candidate;
        }
        long readUntil = snapshotReadUntil();
        if (candidate < readUntil) {
            return store.watermark();
        }
        store.setHistoryStart(candidate);
        store.setMeta(META_HISTORY_START_PENDING, "false");
        LOG.info("History of the replica starts at {}, the first watermark past the snapshot's last read ({})", candidate,
                readUntil == Long.MIN_VALUE ? "no rows" : Long.toString(readUntil));
        return candidate;
    }

    private boolean historyStartPending() {
        return store.meta(META_HISTORY_START_PENDING).map(Boolean::parseBoolean).orElse(false);
    }

    /** The latest time the snapshot read a row, as stored, or {@link Long#MIN_VALUE}. */
    private long snapshotReadUntil() {
        return store.meta(META_SNAPSHOT_READ_UNTIL).map(Long::parseLong).orElse(Long.MIN_VALUE);
    }

    /** Applies one row change; returns the time a snapshot row was read, or {@link Long#MIN_VALUE} for a change. */
    private long apply(RowEvent e) {
        RowKey key = mapper.key(e);
        // A snapshot reads each row of a table keyed by its primary key once: no two of its rows share a key, so
        // their ordinals are all 0 and counting them (a map entry per row) is skipped. Tables keyed by
        // replica.key.columns may repeat a key.
        int ordinal = e.snapshot() && !keyColumnTables.contains(e.table()) ? 0 : ordinals.next(e.table(), e.lsn(), key);
        ChangeEventMapper.Change c = mapper.map(e, key, ordinal, store);
        store.put(c.table(), c.key(), c.version());
        if (c.snapshot()) {
            snapshotRecords++;
            return e.readAtMs() == null ? Long.MIN_VALUE : e.readAtMs();
        }
        changeRecords++;
        return Long.MIN_VALUE;
    }

    /** The probe carried by one of our logical decoding messages, or null. */
    private ProbeMessage.Probe probe(SourceRecord r) {
        String text = ProbeMessage.contentOf(r, probePrefix);
        if (text == null) {
            return null;
        }
        ProbeMessage.Probe probe = ProbeMessage.parse(text);
        if (probe != null) {
            return probe;
        }
        LOG.warn("{}: ignoring a watermark message with prefix {} whose content is not \"<epoch millis> <token> <instance>\"."
                + " Only the replica should emit logical messages with this prefix: find the other writer with pg_stat_activity",
                who.get(), probePrefix);
        return null;
    }

    /**
     * How often retention runs. A prune walks every version of the store inside a batch's transaction, so it
     * runs at most every max(60 s, retention / 10): the file holds at most a tenth more history than asked. A
     * retention shorter than a minute (tests, demos) prunes once per retention, but not more than once a second.
     */
    public static long pruneInterval(long retentionMs) {
        return Math.max(1000, Math.max(Math.min(60_000, retentionMs), retentionMs / 10));
    }

    private void maybePrune(long watermark, long now) {
        if (watermark == Long.MIN_VALUE || now - lastPrune < pruneEveryMs) {
            return;
        }
        lastPrune = now;
        long horizon = watermark - retentionMs;
        if (horizon > store.historyStart()) {
            long started = System.nanoTime();
            long removed = store.prune(horizon);
            LOG.debug("Retention pruned {} versions before {} in {} ms", removed, horizon, (System.nanoTime() - started) / 1_000_000);
        }
    }

    /** Snapshot rows applied since this applier was created (counting replays). */
    public long snapshotRecords() {
        return snapshotRecords;
    }

    /** Streamed changes applied since this applier was created (counting replays). */
    public long changeRecords() {
        return changeRecords;
    }
}
