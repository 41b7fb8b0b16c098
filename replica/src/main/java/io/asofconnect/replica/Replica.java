package io.asofconnect.replica;

import io.asofconnect.replica.capture.ReplicaStats;
import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.common.jdbc.JdbcDriverProperties;
import io.asofconnect.common.lookup.ChangeFeed;
import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.replica.capture.BatchApplier;
import io.asofconnect.replica.capture.CaptureEngine;
import io.asofconnect.replica.capture.EngineProperties;
import io.asofconnect.replica.capture.GapDetector;
import io.asofconnect.replica.capture.OffsetCodec;
import io.asofconnect.replica.capture.PgConnector;
import io.asofconnect.replica.capture.StartupChecks;
import io.asofconnect.replica.capture.WatermarkProber;
import io.asofconnect.store.OpenOutcome;
import io.asofconnect.store.StoreCorruptedException;
import io.asofconnect.store.VersionStore;
import io.asofconnect.replica.watermark.WatermarkTracker;
import org.apache.kafka.connect.errors.ConnectException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One replica: its store, the capture engine feeding it, the watermark prober, and the lookup over them.
 * Created and shared through {@link ReplicaRegistry}; {@link #start} runs the start-up checks and fails
 * fast, and a failure of the engine later is kept for {@link #health()} and retried with a bounded back-off.
 */
public final class Replica implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Replica.class);
    private static final long MAX_BACKOFF_MS = 60_000;

    private final ReplicaConfig config;
    private final PgConnector pg;
    private final StartupChecks checks;
    private final String engineName;
    private final OffsetCodec offsetCodec;
    private final StoreDirectory files;
    private final ReplicaStats stats = new ReplicaStats();
    private final ReplicaUsers users = new ReplicaUsers();
    private final ReplicaLifecycle lifecycle = new ReplicaLifecycle();
    private final ScheduledExecutorService restarter;
    private volatile VersionStore store;
    private WatermarkTracker tracker;
    private volatile GuardedLookup lookup;
    private volatile BatchApplier applier;
    private volatile WatermarkProber prober;
    private volatile CaptureEngine engine;
    private int restarts;
    /** The store instance found damaged, until {@link #restart} has replaced it. */
    private final AtomicReference<VersionStore> damagedStore = new AtomicReference<>();

    private Replica(ReplicaConfig config) {
        this.config = config;
        this.pg = new PgConnector(config);
        this.checks = new StartupChecks(config, pg);
        this.engineName = EngineProperties.engineName(config);
        this.offsetCodec = new OffsetCodec(engineName);
        this.files = new StoreDirectory(config, this::who);
        this.restarter = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "asof-replica-restart-" + config.name());
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Checks the source, opens (or rebuilds) the store and starts capturing. Throws with the fix on any problem.
     *
     * @param firstUser who acquires it ({@link io.asofconnect.common.logging.LogContext#current()}), named by its problem lines
     */
    static Replica start(ReplicaConfig config, String firstUser) {
        config.requireDefinition();
        Replica r = new Replica(config);
        r.users.add(firstUser);
        try {
            r.open();
            return r;
        } catch (RuntimeException e) {
            r.close();
            throw e;
        }
    }

    private void open() {
        if (config.validFrom() == ReplicaConfig.ValidFrom.COLUMN) {
            LOG.warn("{}: {}=COLUMN: a change committed with a valid-from at or before the watermark changes answers"
                    + " already given for those times; enrichment is not deterministic across replays for such changes."
                    + " Only back-date changes to times no record has been enriched at, or use {}=COMMIT_TIME",
                    who(), ReplicaConfig.VALID_FROM, ReplicaConfig.VALID_FROM);
        }
        if (JdbcDriverProperties.isWeakSslMode(config.sslMode())) {
            LOG.warn("{}: {}={} allows unencrypted or unauthenticated connections to the source; set {}=verify-full",
                    who(), ReplicaConfig.SSL_MODE, config.sslMode(), ReplicaConfig.SSL_MODE);
        }
        StartupChecks.SourceState source = checks.run();
        stats.snapshotRowsEstimated(checks.estimatedRows());
        store = files.open();
        OpenOutcome outcome = store.openOutcome();
        if (outcome.kind() == OpenOutcome.Kind.REBUILT) {
            stats.rebuilt();
            stats.quarantined();
            LOG.warn("{}: the store file was unusable ({}) and was rebuilt, the old one kept as {}; a new snapshot follows"
                    + " and records wait for it. Nothing to do unless it recurs; then check the disk under {}", who(),
                    outcome.reason(), outcome.quarantined().map(p -> p.getFileName().toString()).orElse("(none)"),
                    ReplicaConfig.PATH);
        }
        tracker = new WatermarkTracker(store.watermark());
        continueHistory(source, outcome.kind() == OpenOutcome.Kind.REBUILT);
        lookup = newLookup();
        applier = newApplier();
        ReplicaRegistry.bindEngine(engineName, this);
        startEngine();
        prober = new WatermarkProber(pg, config.name(), this::who, config.watermarkIntervalMs(), tracker, config.slotName(), stats);
        prober.start();
        // A probe stamped at T + margin lets the watermark reach T (the applier subtracts the margin).
        long margin = config.watermarkSafetyMarginMs();
        tracker.onWanted(t -> {
            WatermarkProber p = prober;
            if (p != null) {
                p.probeFor(t + margin);
            }
        });
        // A receipt needs no margin: any probe sent after it will do.
        tracker.onReceiptWanted(() -> {
            WatermarkProber p = prober;
            if (p != null) {
                p.probeSoon();
            }
        });
        LOG.info("Replica {} started ({} tables, slot {}, store {})", config.name(), config.tables().size(), config.slotName(),
                outcome.kind());
    }

    private BatchApplier newApplier() {
        return new BatchApplier(config, store, tracker, offsetCodec, System::currentTimeMillis, stats, this::who, this::probeAfterSnapshot);
    }

    /**
     * Asks for a probe as soon as one can move the watermark past a snapshot that just became durable, rather than
     * at the next scheduled probe: until then no record is answered, and the schedule is up to an interval away.
     */
    private void probeAfterSnapshot(long atMillis) {
        WatermarkProber p = prober;
        if (p != null) {
            p.probeAt(atMillis);
        }
    }

    /**
     * Decides how the history in {@link #store} continues and records it there: the one rule for a first
     * start, for a restart after an engine failure and after a rebuild. A store that is new, rebuilt or
     * replaced after a gap gets a snapshot whose rows speak for "now"; so does a store whose offsets stop
     * inside the initial snapshot, which the connector takes again. Then the history starts at the first
     * watermark after that snapshot ({@link BatchApplier#META_HISTORY_START_PENDING}).
     *
     * @param rebuilt the store was just created empty in place of a damaged one
     * @throws HistoryGapException when the stored history cannot be continued and {@code replica.on.gap=FAIL}
     */
    private void continueHistory(StartupChecks.SourceState source, boolean rebuilt) {
        boolean fresh = rebuilt;
        if (!fresh && !store.offsets().isEmpty()) {
            Optional<String> gap = GapDetector.detect(config, store, offsetCodec, source);
            if (gap.isPresent()) {
                stats.gapDetected();
                if (config.onGap() == ReplicaConfig.OnGap.FAIL) {
                    throw new HistoryGapException(GapDetector.failMessage(config, gap.get()));
                }
                LOG.warn("{}: {}; {}=REBUILD: quarantining the store and taking a new snapshot, records wait for it."
                        + " To avoid gaps, keep the slot from being dropped or invalidated while the replica is down"
                        + " (max_slot_wal_keep_size)", who(), gap.get(), ReplicaConfig.ON_GAP);
                replaceStore();
                fresh = true;
            } else if (snapshotInterrupted()) {
                // The rows of the interrupted run were read earlier than the new run's: a row deleted in between
                // would stay in the store with no delete ever streamed (its LSN lies before the new snapshot), so
                // the store starts over empty.
                replaceStore();
                fresh = true;
            }
        }
        if (fresh && source.slot().isPresent()) {
            // Debezium reads a snapshot consistent with the slot only when it creates the slot (it sets the exported
            // snapshot on its transaction). On an existing slot it opens a new transaction and reads the slot's start
            // position a moment later: a change committed in between is neither in the snapshot nor streamed, a
            // version missing from the history (seen in ReplicaCrashTest). A store starting over needs nothing the
            // slot holds, so the slot goes and the engine creates it anew.
            dropSlotWhenReleased();
        } else if (source.slot().isPresent() && "lost".equals(source.slot().get().walStatus()) && store.offsets().isEmpty()) {
            // A lost slot cannot stream at all; the new snapshot needs a new slot.
            checks.dropSlot();
        }
        boolean historyPending;
        if (fresh) {
            // The watermark tracker outlives the store and may carry the old store's watermark: until the new
            // snapshot is through, no time at all can be answered from the new store.
            store.setHistoryStart(Long.MAX_VALUE);
            historyPending = true;
        } else if (!store.offsets().isEmpty()) {
            historyPending = historyPendingMeta();
        } else {
            // A new store; a slot that already exists has passed changes we will not see, so the snapshot's rows
            // speak for "now", not for earlier times. The same holds for rows stamped with the snapshot's time.
            historyPending = source.slot().isPresent() || config.snapshotValidFrom() == ReplicaConfig.SnapshotValidFrom.SNAPSHOT_TIME
                    || historyPendingMeta();
        }
        source.systemIdentifier().ifPresent(id -> store.setMeta(GapDetector.META_SYSTEM_ID, id));
        store.setMeta(GapDetector.META_SLOT, config.slotName());
        store.setMeta(BatchApplier.META_HISTORY_START_PENDING, Boolean.toString(historyPending));
        store.commit();
    }

    private boolean historyPendingMeta() {
        return store.meta(BatchApplier.META_HISTORY_START_PENDING).map(Boolean::parseBoolean).orElse(false);
    }

    /** Whether the stored offsets stop inside the initial snapshot, which the connector then takes again. */
    private boolean snapshotInterrupted() {
        boolean interrupted = GapDetector.snapshotIncomplete(offsetCodec, store);
        if (interrupted) {
            LOG.info("Replica {}: the initial snapshot was interrupted; the store starts over empty, the snapshot is taken"
                    + " again and the history starts after it", config.name());
        }
        return interrupted;
    }

    private GuardedLookup newLookup() {
        return GuardedLookup.overStore(config.name(), store, tracker, Set.copyOf(config.tables()), this::lookupFoundDamage);
    }

    /**
     * Quarantines the current store file and opens an empty one in its place. The new store cannot be opened
     * before the old one is closed (same file, same lock), so readers meanwhile get the answers of a store
     * that holds no history yet.
     */
    private void replaceStore() {
        VersionStore replaced = store;
        answerWithoutHistory();
        try {
            store.close();
        } catch (RuntimeException e) {
            LOG.debug("Replica {}: closing the store to be quarantined failed", config.name(), e);
        }
        try {
            Path aside = files.quarantine();
            stats.quarantined();
            stats.rebuilt();
            LOG.info("Replica {}: old store moved to {}", config.name(), aside.getFileName());
            store = files.open();
        } catch (RuntimeException e) {
            // The closed store stays current and marked damaged, so the next restart tries the replacement again.
            damagedStore.set(replaced);
            throw new ConnectException("replica '" + config.name() + "': cannot replace the store file in " + ReplicaConfig.PATH
                    + " (" + e.getMessage() + "); free disk space or fix the directory's permissions, the replica retries", e);
        }
    }

    /**
     * Throws when the slot no longer continues the stored history. Called by the offset store whenever
     * Debezium reads the stored offsets: each time the connector (re)starts streaming, including its own
     * retries, before it could recreate a missing slot and carry on past the gap, and also on its offset
     * commits, so each check costs one query of the slot. A source that cannot be reached now is left to the
     * connector's retries.
     */
    void verifyResumable() {
        StartupChecks.SourceState source;
        try {
            source = checks.sourceState();
        } catch (ConnectException e) {
            LOG.debug("Replica {}: slot not readable now, the connector will retry", config.name(), e);
            return;
        }
        Optional<String> gap = GapDetector.detect(config, store, offsetCodec, source);
        if (gap.isPresent()) {
            throw new ConnectException(GapDetector.failMessage(config, gap.get()));
        }
    }

    private synchronized void startEngine() {
        engine = new CaptureEngine(engineName, this::who, EngineProperties.of(config, ReplicaOffsetBackingStore.class.getName()), (records, committer) -> {
            applier.handleBatch(records, committer);
            if (lifecycle.streaming()) {
                restarts = 0;
            }
        }, this::onEngineFailure);
        engine.start();
    }

    private void onEngineFailure(Throwable error) {
        if (lifecycle.stopped()) {
            return;
        }
        VersionStore current = store;
        if (storeCorruption(error) != null && !markDamaged(current) && damagedStore.get() == current) {
            // A lookup found the damage first and the rebuild is already on its way; it replaces this engine too.
            return;
        }
        long backoff = Math.min(MAX_BACKOFF_MS, 1000L << Math.min(restarts, 6));
        restarts++;
        lifecycle.restarting("capture engine failed: " + error.getMessage() + "; restarting in " + backoff + " ms", error);
        LOG.warn("{}: capture engine failed ({}); restarting in {} ms, records wait meanwhile. If it keeps failing, fix"
                + " what the error names (the source database's reachability, the user's REPLICATION privilege, the slot)",
                who(), error.getMessage(), backoff);
        try {
            restarter.schedule(this::restart, backoff, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            LOG.debug("replica closing, no restart", e);
        }
    }

    private synchronized void restart() {
        if (lifecycle.stopped()) {
            return;
        }
        Throwable previous = lifecycle.get().failure().orElse(null);
        try {
            CaptureEngine old = engine;
            if (old != null) {
                old.close();
            }
            // The stopped engine's uncommitted batches are read again from the committed offsets; the commit below
            // must not make them durable without those offsets.
            applier.discardPending();
            StartupChecks.SourceState source = checks.sourceState();
            VersionStore before = store;
            VersionStore marked = damagedStore.get();
            if (marked != null && marked != store) {
                // Marked by a lookup that still held a store replaced since: nothing left to heal there.
                damagedStore.compareAndSet(marked, null);
            }
            boolean heal = damagedStore.get() == store;
            if (heal) {
                LOG.warn("{}: the store is damaged ({}); quarantining it and taking a new snapshot, lookups answer"
                        + " OutOfHistory or NotYetVisible until the history starts again. Nothing to do unless it recurs;"
                        + " then check the disk under {}", who(),
                        previous == null ? "damage reported" : previous.getMessage(), ReplicaConfig.PATH);
                replaceStore();
                damagedStore.set(null);
            }
            continueHistory(source, heal);
            if (store != before) {
                lookup = newLookup();
                applier = newApplier();
            }
            startEngine();
            lifecycle.restarted("restarted after: " + (previous == null ? "an engine failure" : previous.getMessage()),
                    Optional.ofNullable(previous));
        } catch (HistoryGapException e) {
            lifecycle.failed(e.getMessage(), e);
            LOG.error("{}: {}", who(), e.getMessage());
        } catch (RuntimeException e) {
            onEngineFailure(e);
        }
    }

    /** The store damage in {@code error}'s cause chain, or null. */
    private static StoreCorruptedException storeCorruption(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof StoreCorruptedException c) {
                return c;
            }
        }
        return null;
    }

    /**
     * Stops answering from {@code damaged} at once; {@link #restart} then replaces it. Returns false when it was
     * already marked.
     */
    private boolean markDamaged(VersionStore damaged) {
        if (damaged == null || !damagedStore.compareAndSet(null, damaged)) {
            return false;
        }
        if (store == damaged) {
            answerWithoutHistory();
        }
        return true;
    }

    /** Publishes a lookup that answers no time from any store, and retires the one it replaces. */
    private void answerWithoutHistory() {
        GuardedLookup old = lookup;
        lookup = GuardedLookup.withoutHistory(config.name(), tracker, Set.copyOf(config.tables()), config.indexes());
        if (old != null) {
            old.retire();
        }
    }

    /**
     * A lookup found {@code damaged} corrupted: stop answering from it and heal in the background, unless the
     * engine's failure already did or the store was replaced meanwhile.
     */
    private void lookupFoundDamage(VersionStore damaged, StoreCorruptedException e) {
        if (damaged != store || !markDamaged(damaged)) {
            return;
        }
        // Scheduled even while a restart runs: that one may have passed its damage check already; restart() is
        // synchronized, so this one follows it and heals.
        lifecycle.restarting("a lookup found the store damaged: " + e.what() + "; rebuilding", e);
        try {
            restarter.execute(this::restart);
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            LOG.debug("replica closing, no rebuild", closing);
        }
    }

    private void retireLookup() {
        GuardedLookup l = lookup;
        if (l != null) {
            l.retire();
        }
    }

    public ReplicaConfig config() {
        return config;
    }

    public VersionLookup lookup() {
        return lookup;
    }

    /** The change feed of the current store, behind the same guard as {@link #lookup()}. */
    ChangeFeed feed() {
        return lookup;
    }

    /** What the replica has done since it started, for metrics. */
    public ReplicaStats stats() {
        return stats;
    }

    /** The connectors and tasks using this replica now. */
    ReplicaUsers users() {
        return users;
    }

    /**
     * How a problem line names this replica: "Replica NAME (used by connector a task 0, ...)". Its threads
     * serve every task that uses it, so the line names them all.
     */
    String who() {
        return "Replica " + config.name() + " (" + users + ")";
    }

    /** The store's versions, keys and bytes on disk now, for metrics. */
    public VersionStore.Footprint footprint() {
        return store.footprint();
    }

    public ReplicaHealth health() {
        ReplicaHealth h = lifecycle.get();
        WatermarkProber p = prober;
        String probeError = p == null ? null : p.lastError();
        if (h.state() == ReplicaHealth.State.RUNNING && probeError != null) {
            // Changes still flow, but the watermark stands still: enrichment waiting on it would stall.
            return new ReplicaHealth(h.state(), "streaming, but watermark probes fail (the watermark does not advance): " + probeError,
                    h.failure());
        }
        return h;
    }

    /** Snapshot rows applied by this run of the replica (0 after a restart that resumed without a snapshot). */
    long snapshotRecordsApplied() {
        return applier == null ? 0 : applier.snapshotRecords();
    }

    /** Whether the store's committed offsets stop inside the initial snapshot, for tests in this module. */
    boolean snapshotCommittedInProgress() {
        return GapDetector.snapshotIncomplete(offsetCodec, store);
    }

    /** The store, for tests and tools in this module. */
    VersionStore store() {
        return store;
    }

    @Override
    public synchronized void close() {
        lifecycle.stop();
        restarter.shutdownNow();
        if (prober != null) {
            prober.close();
        }
        if (engine != null) {
            engine.close();
        }
        ReplicaRegistry.unbindEngine(engineName, this);
        if (tracker != null) {
            tracker.wakeAll();
        }
        if (store != null) {
            retireLookup();
            store.close();
        }
        if (config.slotDropOnStop() && lookup != null) {
            dropSlotWhenReleased();
        }
        LOG.info("Replica {} stopped", config.name());
    }

    /** The walsender lets go of the slot shortly after the engine stops (or its process dies); wait for that, bounded. */
    private void dropSlotWhenReleased() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (true) {
            Optional<StartupChecks.SlotState> slot = checks.sourceState().slot();
            if (slot.isEmpty()) {
                return;
            }
            if (!slot.get().active()) {
                checks.dropSlot();
                return;
            }
            if (System.nanoTime() > deadline) {
                LOG.warn("{}: slot {} still in use after 15 s; not dropped. It retains WAL on the source: drop it with"
                        + " SELECT pg_drop_replication_slot('{}') once no walsender holds it", who(), config.slotName(),
                        config.slotName());
                return;
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
