package io.asofconnect.replica;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.store.StoreCorruptedException;
import io.asofconnect.store.VersionStore;
import io.asofconnect.replica.watermark.WatermarkTracker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Set;

/**
 * Reports a corrupted store found by a lookup to the replica, which heals, and answers that lookup as a
 * store without history would, rather than failing the caller.
 */
final class DamageReportingLookup implements VersionLookup {
    private static final Logger LOG = LoggerFactory.getLogger(DamageReportingLookup.class);

    /** Told of the damage a lookup found in {@code store}. */
    interface DamageListener {
        void damaged(VersionStore store, StoreCorruptedException e);
    }

    private final String replicaName;
    private final VersionLookup delegate;
    private final VersionStore store;
    private final WatermarkTracker tracker;
    private final DamageListener listener;

    DamageReportingLookup(String replicaName, VersionLookup delegate, VersionStore store, WatermarkTracker tracker,
                          DamageListener listener) {
        this.replicaName = replicaName;
        this.delegate = delegate;
        this.store = store;
        this.tracker = tracker;
        this.listener = listener;
    }

    private LookupResult read(java.util.function.Supplier<LookupResult> r, String table, long timestamp) {
        try {
            return r.get();
        } catch (StoreCorruptedException e) {
            LOG.debug("Replica {}: a lookup found the store damaged", replicaName, e);
            listener.damaged(store, e);
            return new NoHistoryLookup(tracker, tables()).at(table, timestamp);
        }
    }

    @Override
    public LookupResult asOf(String table, RowKey key, long timestamp) {
        return read(() -> delegate.asOf(table, key, timestamp), table, timestamp);
    }

    @Override
    public LookupResult current(String table, RowKey key) {
        return read(() -> delegate.current(table, key), table, Long.MAX_VALUE);
    }

    @Override
    public LookupResult exact(String table, RowKey key, VersionId id) {
        return read(() -> delegate.exact(table, key, id), table, id.validFrom());
    }

    @Override
    public long watermark() {
        return delegate.watermark();
    }

    @Override
    public boolean awaitWatermark(long timestamp, Duration timeout) throws InterruptedException {
        return delegate.awaitWatermark(timestamp, timeout);
    }

    @Override
    public void wantWatermark(long timestamp) {
        delegate.wantWatermark(timestamp);
    }

    @Override
    public long receiptWatermark() {
        return delegate.receiptWatermark();
    }

    @Override
    public boolean awaitReceiptWatermark(long receipt, Duration timeout) throws InterruptedException {
        return delegate.awaitReceiptWatermark(receipt, timeout);
    }

    @Override
    public void wantReceiptWatermark(long receipt) {
        delegate.wantReceiptWatermark(receipt);
    }

    @Override
    public long sourceNow() {
        return delegate.sourceNow();
    }

    @Override
    public long historyStart() {
        return delegate.historyStart();
    }

    @Override
    public Set<String> tables() {
        return delegate.tables();
    }
}
