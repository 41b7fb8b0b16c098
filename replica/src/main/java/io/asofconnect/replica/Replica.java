package io.asofconnect.replica;

import io.asofconnect.lookup.VersionLookup;
import io.asofconnect.replica.capture.BatchApplier;
import io.asofconnect.replica.capture.CaptureEngine;
import io.asofconnect.replica.capture.EngineProperties;
import io.asofconnect.replica.capture.GapDetector;
import io.asofconnect.replica.capture.OffsetCodec;
import io.asofconnect.replica.capture.PgConnector;
import io.asofconnect.replica.capture.StartupChecks;
import io.asofconnect.replica.capture.WatermarkProber;
import io.asofconnect.replica.store.MapDbVersionStore;
import io.asofconnect.replica.store.OpenOutcome;
import io.asofconnect.replica.store.Quarantine;
import io.asofconnect.replica.store.StoreBackedLookup;
import io.asofconnect.replica.store.StoreLockedException;
import io.asofconnect.replica.store.StoreOptions;
import io.asofconnect.replica.store.VersionStore;
import io.asofconnect.replica.store.WatermarkTracker;
import org.apache.kafka.connect.errors.ConnectException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
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
    private final AtomicReference<ReplicaHealth> health = new AtomicReference<>(
            new ReplicaHealth(ReplicaHealth.State.STARTING, "starting", Optional.empty()));
    private final ScheduledExecutorService restarter;
    private volatile VersionStore store;
    private WatermarkTracker tracker;
    private volatile RetiringLookup lookup;
    private volatile BatchApplier applier;
    private volatile WatermarkProber prober;
    private volatile CaptureEngine engine;
    private int restarts;

    private Replica(ReplicaConfig config) {
        this.config = config;
        this.pg = new PgConnector(config);
        this.checks = new StartupChecks(config, pg);
        this.engineName = EngineProperties.engineName(config);
        this.offsetCodec = new OffsetCodec(engineName);
        this.restarter = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "asof-replica-restart-" + config.name());
            t.setDaemon(true);
            return t;
        });
    }

    /** Checks the source, opens (or rebuilds) the store and starts capturing. Throws with the fix on any problem. */
    static Replica start(ReplicaConfig config) {
        config.requireDefinition();
        Replica r = new Replica(config);
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
            LOG.warn("Replica {}: {}=COLUMN: a change committed with a valid-from at or before the watermark changes answers"
                    + " already given for those times; enrichment is not deterministic across replays for such changes",
                    config.name(), ReplicaConfig.VALID_FROM);
        }
        StartupChecks.SourceState source = checks.run();
        store = openStore();
        boolean historyPending;
        OpenOutcome outcome = store.openOutcome();
        if (outcome.kind() == OpenOutcome.Kind.REBUILT) {
            LOG.warn("Replica {}: the store file was unusable ({}) and was rebuilt; a new snapshot follows", config.name(), outcome.reason());
            historyPending = true;
        } else if (!store.offsets().isEmpty()) {
            Optional<String> gap = GapDetector.detect(config, store, offsetCodec, source);
            if (gap.isPresent()) {
                if (config.onGap() == ReplicaConfig.OnGap.FAIL) {
                    throw new ConnectException(GapDetector.failMessage(config, gap.get()));
                }
                LOG.warn("Replica {}: {}; {}=REBUILD: quarantining the store and taking a new snapshot", config.name(), gap.get(), ReplicaConfig.ON_GAP);
                replaceStore(source);
                historyPending = true;
            } else {
                boolean interruptedSnapshot = GapDetector.snapshotIncomplete(offsetCodec, store);
                if (interruptedSnapshot) {
                    LOG.info("Replica {}: the initial snapshot was interrupted; it is taken again and the history starts after it",
                            config.name());
                }
                historyPending = interruptedSnapshot
                        || store.meta(BatchApplier.META_HISTORY_START_PENDING).map(Boolean::parseBoolean).orElse(false);
            }
        } else {
            // A new store; a slot that already exists has passed changes we will not see, so the snapshot's rows
            // speak for "now", not for earlier times. The same holds for rows stamped with the snapshot's time.
            historyPending = source.slot().isPresent() || config.snapshotValidFrom() == ReplicaConfig.SnapshotValidFrom.SNAPSHOT_TIME
                    || store.meta(BatchApplier.META_HISTORY_START_PENDING).map(Boolean::parseBoolean).orElse(false);
        }
        if (source.slot().isPresent() && "lost".equals(source.slot().get().walStatus()) && store.offsets().isEmpty()) {
            // A lost slot cannot stream at all; the new snapshot needs a new slot.
            checks.dropSlot();
        }
        source.systemIdentifier().ifPresent(id -> store.setMeta(GapDetector.META_SYSTEM_ID, id));
        store.setMeta(GapDetector.META_SLOT, config.slotName());
        store.setMeta(BatchApplier.META_HISTORY_START_PENDING, Boolean.toString(historyPending));
        store.commit();

        tracker = new WatermarkTracker(store.watermark());
        lookup = newLookup();
        applier = new BatchApplier(config, store, tracker, offsetCodec, System::currentTimeMillis);
        ReplicaRegistry.bindEngine(engineName, this);
        startEngine();
        prober = new WatermarkProber(pg, config.name(), config.watermarkIntervalMs());
        prober.start();
        LOG.info("Replica {} started ({} tables, slot {}, store {})", config.name(), config.tables().size(), config.slotName(),
                outcome.kind());
    }

    private RetiringLookup newLookup() {
        return new RetiringLookup(new StoreBackedLookup(store, tracker, Set.copyOf(config.tables())), config.name());
    }

    /**
     * Quarantines the current store file and opens an empty one in its place. The new store cannot be opened
     * before the old one is closed (same file, same lock), so readers still holding the old lookup get a
     * retriable error until the new lookup is published.
     */
    private void replaceStore(StartupChecks.SourceState source) {
        retireLookup();
        store.close();
        store = null;
        Path aside = Quarantine.moveAside(config.storeFile());
        LOG.info("Replica {}: old store moved to {}", config.name(), aside.getFileName());
        store = openStore();
        if (source.slot().isPresent() && "lost".equals(source.slot().get().walStatus())) {
            checks.dropSlot();
        }
    }

    /**
     * Throws when the slot no longer continues the stored history. Called by the offset store each time the
     * connector (re)starts streaming, including Debezium's own retries, before it could recreate a missing
     * slot and carry on past the gap. A source that cannot be reached now is left to the connector's retries.
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

    private VersionStore openStore() {
        try {
            Files.createDirectories(config.directory());
        } catch (IOException e) {
            throw new ConnectException("replica '" + config.name() + "': cannot create the store directory given by "
                    + ReplicaConfig.PATH + ": " + e.getMessage(), e);
        }
        try {
            return MapDbVersionStore.open(config.storeFile(), StoreOptions.defaults());
        } catch (StoreLockedException e) {
            throw new ConnectException("replica '" + config.name() + "': " + e.getMessage() + " (" + ReplicaConfig.PATH + ")", e);
        }
    }

    private synchronized void startEngine() {
        engine = new CaptureEngine(engineName, EngineProperties.of(config), (records, committer) -> {
            applier.handleBatch(records, committer);
            if (health.get().state() != ReplicaHealth.State.RUNNING && health.get().state() != ReplicaHealth.State.STOPPED) {
                health.set(new ReplicaHealth(ReplicaHealth.State.RUNNING, "streaming", Optional.empty()));
                restarts = 0;
            }
        }, this::onEngineFailure);
        engine.start();
    }

    private void onEngineFailure(Throwable error) {
        if (health.get().state() == ReplicaHealth.State.STOPPED) {
            return;
        }
        long backoff = Math.min(MAX_BACKOFF_MS, 1000L << Math.min(restarts, 6));
        restarts++;
        health.set(new ReplicaHealth(ReplicaHealth.State.RESTARTING, "capture engine failed: " + error.getMessage()
                + "; restarting in " + backoff + " ms", Optional.of(error)));
        LOG.warn("Replica {}: capture engine failed ({}); restarting in {} ms", config.name(), error.getMessage(), backoff);
        try {
            restarter.schedule(this::restart, backoff, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            LOG.debug("replica closing, no restart", e);
        }
    }

    private synchronized void restart() {
        if (health.get().state() == ReplicaHealth.State.STOPPED) {
            return;
        }
        Throwable previous = health.get().failure().orElse(null);
        try {
            CaptureEngine old = engine;
            if (old != null) {
                old.close();
            }
            StartupChecks.SourceState source = checks.sourceState();
            Optional<String> gap = GapDetector.detect(config, store, offsetCodec, source);
            if (gap.isPresent()) {
                if (config.onGap() == ReplicaConfig.OnGap.FAIL) {
                    ConnectException e = new ConnectException(GapDetector.failMessage(config, gap.get()));
                    health.set(new ReplicaHealth(ReplicaHealth.State.FAILED, e.getMessage(), Optional.of(e)));
                    LOG.error("Replica {}: {}", config.name(), e.getMessage());
                    return;
                }
                LOG.warn("Replica {}: {}; {}=REBUILD: quarantining the store and taking a new snapshot", config.name(), gap.get(), ReplicaConfig.ON_GAP);
                replaceStore(source);
                // Until the new snapshot is through, no time can be answered from the new store.
                store.setHistoryStart(Long.MAX_VALUE);
                store.setMeta(BatchApplier.META_HISTORY_START_PENDING, "true");
                source.systemIdentifier().ifPresent(id -> store.setMeta(GapDetector.META_SYSTEM_ID, id));
                store.setMeta(GapDetector.META_SLOT, config.slotName());
                store.commit();
                lookup = newLookup();
                applier = new BatchApplier(config, store, tracker, offsetCodec, System::currentTimeMillis);
            }
            startEngine();
            health.set(new ReplicaHealth(ReplicaHealth.State.STARTING, "restarted after: "
                    + (previous == null ? "an engine failure" : previous.getMessage()), Optional.ofNullable(previous)));
        } catch (RuntimeException e) {
            onEngineFailure(e);
        }
    }

    private void retireLookup() {
        RetiringLookup l = lookup;
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

    public ReplicaHealth health() {
        ReplicaHealth h = health.get();
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

    /** The store, for tests and tools in this module. */
    VersionStore store() {
        return store;
    }

    @Override
    public synchronized void close() {
        health.set(new ReplicaHealth(ReplicaHealth.State.STOPPED, "stopped", Optional.empty()));
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

    /** The walsender lets go of the slot shortly after the engine stops; wait for that, bounded. */
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
                LOG.warn("Replica {}: slot {} still in use 15 s after stop; not dropped", config.name(), config.slotName());
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
