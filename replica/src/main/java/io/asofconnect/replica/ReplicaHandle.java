package io.asofconnect.replica;

import io.asofconnect.replica.capture.ReplicaStats;
import io.asofconnect.common.lookup.Change;
import io.asofconnect.common.lookup.ChangeFeed;
import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.common.lookup.Watermark;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One user's reference to a shared replica, from {@link ReplicaRegistry#acquire}. Lookups go to the replica;
 * {@link #close()} releases this reference (once; later calls do nothing) and the last release stops the
 * replica. A handle must not be used after it is closed.
 *
 * <p>The handle is also the replica's {@link ChangeFeed} ({@link #feed()}), for the feed tables and indexes of its
 * definition ({@code replica.feed.tables}, {@code replica.indexes}). Each read goes to the replica's current store
 * through the guard its lookups use: a read of a store retired by a rebuild is a retriable error, damage is
 * reported and heals. A rebuild, like retention, takes the history away: the {@link #historyStart()} then lies
 * past what a reader read, so a reader checks it after its reads (as the lookups check it after theirs).
 */
public final class ReplicaHandle implements VersionLookup, ChangeFeed, AutoCloseable {
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

    /** The replica's change feed: this handle. */
    public ChangeFeed feed() {
        return this;
    }

    private ChangeFeed currentFeed() {
        if (closed.get()) {
            throw new IllegalStateException("the handle of replica '" + replicaName() + "' was closed; acquire a new one");
        }
        return replica.feed();
    }

    @Override
    public List<Change> changesAfter(Change after, long upTo, int limit) {
        return currentFeed().changesAfter(after, upTo, limit);
    }

    @Override
    public Optional<Version> before(String table, RowKey key, Change at) {
        return currentFeed().before(table, key, at);
    }

    @Override
    public List<RowKey> indexed(String table, List<String> columns, RowKey value, RowKey afterKey, int limit) {
        return currentFeed().indexed(table, columns, value, afterKey, limit);
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
