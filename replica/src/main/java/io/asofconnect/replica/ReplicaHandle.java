package io.asofconnect.replica;

import io.asofconnect.replica.capture.ReplicaStats;
import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.common.lookup.Watermark;

import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One user's reference to a shared replica, from {@link ReplicaRegistry#acquire}. Lookups go to the replica;
 * {@link #close()} releases this reference (once; later calls do nothing) and the last release stops the
 * replica. A handle must not be used after it is closed.
 */
public final class ReplicaHandle implements VersionLookup, AutoCloseable {
    private final Replica replica;
    private final AtomicBoolean closed = new AtomicBoolean();

    /** Who acquired this handle, as the replica's problem lines name it; null outside Connect. */
    private final String user;

    ReplicaHandle(Replica replica, String user) {
        this.replica = replica;
        this.user = user;
    }

    public String replicaName() {
        return replica.config().name();
    }

    /** What the replica is doing; FAILED or RESTARTING carry the engine's error, whose message says what to do. */
    public ReplicaHealth health() {
        return replica.health();
    }

    /** What the replica has done since it started, for metrics. */
    public ReplicaStats stats() {
        return replica.stats();
    }

    /** The replica store's versions, keys and bytes on disk now, for metrics. */
    public io.asofconnect.store.VersionStore.Footprint footprint() {
        return replica.footprint();
    }

    /** The error that stopped the capture engine, if it is stopped or restarting because of one. */
    public Optional<Throwable> failure() {
        ReplicaHealth h = replica.health();
        return h.healthy() ? Optional.empty() : h.failure();
    }

    private VersionLookup lookup() {
        if (closed.get()) {
            throw new IllegalStateException("the handle of replica '" + replicaName() + "' was closed; acquire a new one");
        }
        return replica.lookup();
    }

    @Override
    public LookupResult asOf(String table, RowKey key, long timestamp) {
        return lookup().asOf(table, key, timestamp);
    }

    @Override
    public LookupResult current(String table, RowKey key) {
        return lookup().current(table, key);
    }

    @Override
    public LookupResult exact(String table, RowKey key, VersionId id) {
        return lookup().exact(table, key, id);
    }

    @Override
    public Watermark watermark() {
        return lookup().watermark();
    }

    @Override
    public long historyStart() {
        return lookup().historyStart();
    }

    @Override
    public Set<String> tables() {
        return lookup().tables();
    }

    /** The replica behind this handle, for this module's tests. */
    Replica replica() {
        return replica;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            ReplicaRegistry.release(replica, user);
        }
    }

    @Override
    public String toString() {
        return "ReplicaHandle{" + replicaName() + ", " + replica.health().state() + "}";
    }
}
