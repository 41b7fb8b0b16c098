package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.common.logging.LogContext;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.errors.ConnectException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The replicas of this worker JVM, by {@code replica.name}, reference-counted. This is the one static
 * registry of the plugin, and it must be: every connector and task in a worker that names a replica must
 * share its one slot and one store file, and Debezium creates our offset store by class name, so it can
 * only find its store through a static.
 *
 * <p>{@link #acquire} starts the replica on first use (running its start-up checks, which throw with the
 * fix on a misconfiguration) and otherwise shares the running one: either the props define the replica
 * with the same settings, or they give only {@code replica.name}. Settings that differ are rejected,
 * naming the keys (never the values); two replicas on one slot are rejected too. The last
 * {@link ReplicaHandle#close()} stops the replica.
 *
 * <p>Stopping takes seconds (the engine, the walsender, the store file). Until it is done the entry stays
 * here as <em>closing</em>: an {@link #acquire} of the same name, slot or file meanwhile (Connect restarting
 * a task after a config update) waits for it, bounded by {@link #CLOSE_WAIT_MS}, instead of starting a second
 * replica that would find the store file still locked.
 */
public final class ReplicaRegistry {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicaRegistry.class);

    private static final Object LOCK = new Object();
    /** Guarded by {@link #LOCK}. */
    private static final Map<String, Entry> REPLICAS = new HashMap<>();
    /** Engine name to its replica, read by {@link ReplicaOffsetBackingStore}. */
    private static final Map<String, Replica> ENGINE_REPLICAS = new ConcurrentHashMap<>();

    /** How long an {@link #acquire} waits for a replica of the same name, slot or file to finish stopping. */
    static final long CLOSE_WAIT_MS = 60_000;

    private static final class Entry {
        final Replica replica;
        int references;
        /** Set (guarded by {@link #LOCK}) once the last reference is released; counted down when the close is done. */
        CountDownLatch closing;

        Entry(Replica replica) {
            this.replica = replica;
        }
    }

    private ReplicaRegistry() {
    }

    /**
     * A handle on the replica named by {@code props}' {@code replica.name}, starting it if it is not running.
     *
     * @throws ConfigException  on invalid or conflicting settings
     * @throws org.apache.kafka.connect.errors.ConnectException when the start-up checks or the store fail
     */
    public static ReplicaHandle acquire(Map<String, ?> props) {
        ReplicaConfig config = new ReplicaConfig(props);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MS);
        while (true) {
            CountDownLatch stopping;
            Entry closing;
            synchronized (LOCK) {
                closing = closingConflict(config);
                if (closing == null) {
                    return acquireLocked(config);
                }
                stopping = closing.closing;
            }
            awaitClosed(config, closing.replica.config().name(), stopping, deadline);
        }
    }

    /** A replica that is stopping and holds this name, or (when {@code config} defines one) its slot or file. */
    private static Entry closingConflict(ReplicaConfig config) {
        for (Entry e : REPLICAS.values()) {
            if (e.closing == null) {
                continue;
            }
            ReplicaConfig o = e.replica.config();
            if (o.name().equals(config.name())
                    || (config.isDefinition() && config.slotName() != null && sameSlot(o, config))
                    || o.storeFile().equals(config.storeFile())) {
                return e;
            }
        }
        return null;
    }

    private static boolean sameSlot(ReplicaConfig o, ReplicaConfig config) {
        return o.slotName().equals(config.slotName()) && o.hostname().equals(config.hostname()) && o.port() == config.port()
                && o.dbname().equals(config.dbname());
    }

    private static void awaitClosed(ReplicaConfig config, String stoppingName, CountDownLatch stopping, long deadline) {
        long left = deadline - System.nanoTime();
        try {
            if (left > 0 && stopping.await(left, TimeUnit.NANOSECONDS)) {
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConnectException("interrupted while waiting for replica '" + stoppingName + "' to stop before starting replica '"
                    + config.name() + "'", e);
        }
        throw new ConnectException("replica '" + stoppingName + "' is still stopping after " + CLOSE_WAIT_MS / 1000 + " s, so replica '"
                + config.name() + "' cannot start yet (it needs the same name, slot or store file); see the worker log for what"
                + " the stop waits on (the capture engine or the slot's walsender) and restart the task");
    }

    /** Guarded by {@link #LOCK}: shares the running replica of this name or starts it. */
    private static ReplicaHandle acquireLocked(ReplicaConfig config) {
        // Connect acquires on the task's thread (configure or start), whose logging context names the task.
        String user = LogContext.current();
        Entry existing = REPLICAS.get(config.name());
        if (existing != null) {
            if (config.isDefinition()) {
                Set<String> differing = config.differingKeys(existing.replica.config());
                if (!differing.isEmpty()) {
                    boolean derived = differing.contains(ReplicaConfig.INDEXES) || differing.contains(ReplicaConfig.FEED_TABLES);
                    throw new ConfigException("replica '" + config.name() + "' is already running in this worker with other"
                            + " settings for " + differing + "; give identical settings, or only " + ReplicaConfig.NAME
                            + " to share it, or choose another " + ReplicaConfig.NAME
                            + (derived ? " (the running replica keeps only the indexes and feed tables of its own definition: "
                            + describeDerived(existing.replica.config()) + "; a view that needs others uses a replica of its own,"
                            + " with its own " + ReplicaConfig.NAME + " and " + ReplicaConfig.SLOT_NAME + ")" : ""));
                }
            } else {
                List<String> missing = config.missingFrom(existing.replica.config());
                if (!missing.isEmpty()) {
                    throw new ConfigException("replica '" + config.name() + "' is running in this worker without " + String.join(" and ", missing)
                            + ", which this connector needs; it keeps " + describeDerived(existing.replica.config())
                            + ". Add them to the settings of the connector that defines replica '" + config.name() + "', or give this"
                            + " connector a replica of its own (another " + ReplicaConfig.NAME + " and " + ReplicaConfig.SLOT_NAME + ")");
                }
            }
            existing.references++;
            existing.replica.users().add(user);
            return new ReplicaHandle(existing.replica, user);
        }
        if (!config.isDefinition()) {
            throw new ConfigException(ReplicaConfig.NAME, config.name(), "no replica of this name runs in this worker yet, and"
                    + " these settings do not define it; give the replica's settings (" + ReplicaConfig.HOSTNAME + ", "
                    + ReplicaConfig.DBNAME + ", " + ReplicaConfig.USER + ", " + ReplicaConfig.TABLES + ", " + ReplicaConfig.SLOT_NAME
                    + ", ...) here, or start the connector that defines it first");
        }
        config.requireDefinition();
        for (Entry other : REPLICAS.values()) {
            ReplicaConfig o = other.replica.config();
            if (sameSlot(o, config)) {
                throw new ConfigException(ReplicaConfig.SLOT_NAME, config.slotName(), "replica '" + o.name()
                        + "' already uses this slot on " + config.hostname() + ":" + config.port() + "/" + config.dbname()
                        + "; two replicas cannot share a slot: give replica '" + config.name() + "' its own slot, or use"
                        + " replica.name=" + o.name() + " to share that replica");
            }
            if (o.storeFile().equals(config.storeFile())) {
                throw new ConfigException(ReplicaConfig.PATH, o.directory().toString(), "replica '" + o.name()
                        + "' already uses this store file");
            }
        }
        Replica replica = Replica.start(config, user);
        Entry e = new Entry(replica);
        e.references = 1;
        REPLICAS.put(config.name(), e);
        return new ReplicaHandle(replica, user);
    }

    /** The indexes and feed tables a replica keeps, for errors. */
    private static String describeDerived(ReplicaConfig c) {
        return (c.indexes().isEmpty() ? "no index" : "the indexes " + c.indexes()) + " and "
                + (c.feedTables().isEmpty() ? "no feed table" : "the feed tables " + c.feedTables());
    }

    static void release(Replica replica, String user) {
        String name = replica.config().name();
        Entry toClose = null;
        synchronized (LOCK) {
            Entry e = REPLICAS.get(name);
            if (e == null || e.replica != replica || e.closing != null) {
                return;
            }
            replica.users().remove(user);
            if (--e.references == 0) {
                e.closing = new CountDownLatch(1);
                toClose = e;
            }
        }
        if (toClose != null) {
            LOG.info("Last user of replica {} released it; stopping", name);
            try {
                replica.close();
            } finally {
                synchronized (LOCK) {
                    REPLICAS.remove(name, toClose);
                }
                toClose.closing.countDown();
            }
        }
    }

    /** Whether the replica of this name is stopping (its last handle was closed and its close has not returned). */
    static boolean isClosing(String name) {
        synchronized (LOCK) {
            Entry e = REPLICAS.get(name);
            return e != null && e.closing != null;
        }
    }

    /** How many handles are open on the replica of this name (0 when it is not running). */
    public static int references(String name) {
        synchronized (LOCK) {
            Entry e = REPLICAS.get(name);
            return e == null || e.closing != null ? 0 : e.references;
        }
    }

    static void bindEngine(String engineName, Replica replica) {
        ENGINE_REPLICAS.put(engineName, replica);
    }

    /** Unbinds only if {@code replica} is the one bound: a replica that failed to start must not unbind the running one. */
    static void unbindEngine(String engineName, Replica replica) {
        ENGINE_REPLICAS.remove(engineName, replica);
    }

    static Replica engineReplica(String engineName) {
        Replica s = ENGINE_REPLICAS.get(engineName);
        if (s == null) {
            throw new IllegalStateException("no version store is bound for capture engine '" + engineName + "'; the offset store"
                    + " " + ReplicaOffsetBackingStore.class.getName() + " works only inside a replica started by ReplicaRegistry");
        }
        return s;
    }
}
