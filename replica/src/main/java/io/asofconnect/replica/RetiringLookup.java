package io.asofconnect.replica;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.VersionLookup;
import org.apache.kafka.connect.errors.RetriableException;

import java.time.Duration;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The lookup over one store instance, which the replica retires before it closes that store (on a
 * REBUILD, or on stop). A reader that picked up this lookup just before and reads after the close would
 * otherwise get MapDB's raw "volume closed" error; it gets a {@link RetriableException} instead, and the
 * next read goes to the replica's new lookup.
 */
final class RetiringLookup implements VersionLookup {
    private final VersionLookup delegate;
    private final String replicaName;
    private volatile boolean retired;

    RetiringLookup(VersionLookup delegate, String replicaName) {
        this.delegate = delegate;
        this.replicaName = replicaName;
    }

    /** Called before the store behind this lookup is closed; reads failing from then on are retriable. */
    void retire() {
        retired = true;
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
        return read(() -> delegate.asOf(table, key, timestamp));
    }

    @Override
    public LookupResult current(String table, RowKey key) {
        return read(() -> delegate.current(table, key));
    }

    @Override
    public LookupResult exact(String table, RowKey key, VersionId id) {
        return read(() -> delegate.exact(table, key, id));
    }

    @Override
    public long watermark() {
        return read(delegate::watermark);
    }

    @Override
    public boolean awaitWatermark(long timestamp, Duration timeout) throws InterruptedException {
        // Waits on the watermark tracker only, which outlives the store.
        return delegate.awaitWatermark(timestamp, timeout);
    }

    @Override
    public void wantWatermark(long timestamp) {
        // A wish to the tracker, which outlives the store: harmless after retirement.
        delegate.wantWatermark(timestamp);
    }

    @Override
    public long receiptWatermark() {
        return read(delegate::receiptWatermark);
    }

    @Override
    public boolean awaitReceiptWatermark(long receipt, Duration timeout) throws InterruptedException {
        // Waits on the watermark tracker only, which outlives the store.
        return delegate.awaitReceiptWatermark(receipt, timeout);
    }

    @Override
    public void wantReceiptWatermark(long receipt) {
        // A wish to the tracker, which outlives the store: harmless after retirement.
        delegate.wantReceiptWatermark(receipt);
    }

    @Override
    public long sourceNow() {
        // A clock reading, not a store read: valid after retirement too.
        return delegate.sourceNow();
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
