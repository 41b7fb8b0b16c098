package io.asofconnect.replica;

import io.asofconnect.common.lookup.Change;
import io.asofconnect.common.lookup.ChangeFeed;
import io.asofconnect.common.lookup.IndexDeclaration;
import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.common.lookup.Watermark;
import io.asofconnect.store.StoreCorruptedException;
import io.asofconnect.store.VersionStore;
import org.apache.kafka.connect.errors.RetriableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The replica's lookup over one store instance, guarding readers against that store failing under them, the
 * one concern of this decorator:
 * <ul>
 *   <li><b>damage</b>: a lookup that finds the store corrupted reports it to the replica, which heals, and is
 *   answered as a store without history would answer it, rather than failing the caller;</li>
 *   <li><b>retirement</b>: the replica retires this lookup before it closes the store (on a rebuild, or on stop).
 *   A reader that picked it up just before and reads after the close would otherwise get MapDB's raw "volume
 *   closed" error; it gets a {@link RetriableException} instead, and the next read goes to the replica's new
 *   lookup.</li>
 * </ul>
 * The watermark is the replica's and outlives every store: it is handed on as it is.
 *
 * <p>The same guard covers the store's {@link ChangeFeed}: a read of a retired store is retriable, and damage
 * found by {@link #before} is reported and answered as a store without history answers (no version). Both
 * lower nothing silently: the history start of the lookup that replaces this one is {@link Long#MAX_VALUE}, then
 * the new history's start, so a reader that checks {@link #historyStart()} after its reads sees it lost them.
 */
final class GuardedLookup implements VersionLookup, ChangeFeed {
    private static final Logger LOG = LoggerFactory.getLogger(GuardedLookup.class);

    /** Told of the damage a lookup found in {@code store}. */
    interface DamageListener {
        void damaged(VersionStore store, StoreCorruptedException e);
    }

    private final String replicaName;
    private final VersionLookup delegate;
    private final ChangeFeed feed;
    /** The store {@code delegate} reads, which a damage report names; null when it reads none. */
    private final VersionStore store;
    private final DamageListener listener;
    private volatile boolean retired;

    private GuardedLookup(String replicaName, VersionLookup delegate, ChangeFeed feed, VersionStore store, DamageListener listener) {
        this.replicaName = replicaName;
        this.delegate = delegate;
        this.feed = feed;
        this.store = store;
        this.listener = listener;
    }

    /** The lookup over {@code store}; damage found in it goes to {@code listener}. */
    static GuardedLookup overStore(String replicaName, VersionStore store, Watermark watermark, Set<String> tables,
                                   DamageListener listener) {
        return new GuardedLookup(replicaName, new StoreBackedLookup(store, watermark, tables), store, store, listener);
    }

    /** The lookup that answers no time from any store, while one is being rebuilt; {@code indexes} are those declared. */
    static GuardedLookup withoutHistory(String replicaName, Watermark watermark, Set<String> tables, List<IndexDeclaration> indexes) {
        NoHistoryLookup none = new NoHistoryLookup(watermark, tables, indexes);
        return new GuardedLookup(replicaName, none, none, null, (s, e) -> { });
    }

    /** Called before the store behind this lookup is closed; reads failing from then on are retriable. */
    void retire() {
        retired = true;
    }

    private LookupResult rowRead(Supplier<LookupResult> r, String table, long timestamp) {
        return read(() -> {
            try {
                return r.get();
            } catch (StoreCorruptedException e) {
                if (store == null) {
                    throw e;
                }
                LOG.debug("Replica {}: a lookup found the store damaged", replicaName, e);
                listener.damaged(store, e);
                return new NoHistoryLookup(watermark(), tables(), List.of()).at(table, timestamp);
            }
        });
    }

    private <T> T read(Supplier<T> r) {
        try {
            return r.get();
        } catch (RuntimeException | IllegalAccessError e) {
            // MapDB reports a closed store as an IllegalAccessError in some paths, hence the Error.
            if (retired) {
                throw new RetriableException("replica '" + replicaName + "' closed the store this read used (it is being"
                        + " rebuilt after a gap, or stopped); retry the read, which goes to the replica's current store", e);
            }
            throw e;
        }
    }

    @Override
    public LookupResult asOf(String table, RowKey key, long timestamp) {
        return rowRead(() -> delegate.asOf(table, key, timestamp), table, timestamp);
    }

    @Override
    public LookupResult current(String table, RowKey key) {
        return rowRead(() -> delegate.current(table, key), table, Long.MAX_VALUE);
    }

    @Override
    public LookupResult exact(String table, RowKey key, VersionId id) {
        return rowRead(() -> delegate.exact(table, key, id), table, id.validFrom());
    }

    @Override
    public List<Change> changesAfter(Change after, long upTo, int limit) {
        return read(() -> feed.changesAfter(after, upTo, limit));
    }

    @Override
    public Optional<Version> before(String table, RowKey key, Change at) {
        return read(() -> {
            try {
                return feed.before(table, key, at);
            } catch (StoreCorruptedException e) {
                if (store == null) {
                    throw e;
                }
                LOG.debug("Replica {}: a feed read found the store damaged", replicaName, e);
                listener.damaged(store, e);
                // Not "absent": a view would publish deletes or miss inserts. The replica heals by a rebuild, which
                // moves the history start past every reader's position, and the reader says so.
                throw new org.apache.kafka.connect.errors.ConnectException("replica '" + replicaName + "': its store is damaged"
                        + " and is being rebuilt; a reader of its change feed must be rebuilt too", e);
            }
        });
    }

    @Override
    public List<RowKey> indexed(String table, List<String> columns, RowKey value, RowKey afterKey, int limit) {
        return read(() -> feed.indexed(table, columns, value, afterKey, limit));
    }

    @Override
    public Watermark watermark() {
        return delegate.watermark();
    }

    @Override
    public long historyStart() {
        return read(delegate::historyStart);
    }

    @Override
    public Set<String> tables() {
        return delegate.tables();
    }
}
