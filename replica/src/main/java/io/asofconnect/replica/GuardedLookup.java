package io.asofconnect.replica;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.common.lookup.Watermark;
import io.asofconnect.store.StoreCorruptedException;
import io.asofconnect.store.VersionStore;
import org.apache.kafka.connect.errors.RetriableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 */
final class GuardedLookup implements VersionLookup {
    private static final Logger LOG = LoggerFactory.getLogger(GuardedLookup.class);

    /** Told of the damage a lookup found in {@code store}. */
    interface DamageListener {
        void damaged(VersionStore store, StoreCorruptedException e);
    }

    private final String replicaName;
    private final VersionLookup delegate;
    /** The store {@code delegate} reads, which a damage report names; null when it reads none. */
    private final VersionStore store;
    private final DamageListener listener;
    private volatile boolean retired;

    private GuardedLookup(String replicaName, VersionLookup delegate, VersionStore store, DamageListener listener) {
        this.replicaName = replicaName;
        this.delegate = delegate;
        this.store = store;
        this.listener = listener;
    }

    /** The lookup over {@code store}; damage found in it goes to {@code listener}. */
    static GuardedLookup overStore(String replicaName, VersionStore store, Watermark watermark, Set<String> tables,
                                   DamageListener listener) {
        return new GuardedLookup(replicaName, new StoreBackedLookup(store, watermark, tables), store, listener);
    }

    /** The lookup that answers no time from any store, while one is being rebuilt. */
    static GuardedLookup withoutHistory(String replicaName, Watermark watermark, Set<String> tables) {
        return new GuardedLookup(replicaName, new NoHistoryLookup(watermark, tables), null, (s, e) -> { });
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
                return new NoHistoryLookup(watermark(), tables()).at(table, timestamp);
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
