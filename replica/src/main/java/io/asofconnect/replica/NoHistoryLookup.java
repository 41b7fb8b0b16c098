package io.asofconnect.replica;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.replica.watermark.WatermarkTracker;

import java.time.Duration;
import java.util.Set;

/**
 * The answers of a store that holds no history yet, while one is being rebuilt: OutOfHistory up to the
 * watermark, NotYetVisible beyond it, never a row.
 */
final class NoHistoryLookup implements VersionLookup {
    private final WatermarkTracker watermark;
    private final Set<String> tables;

    NoHistoryLookup(WatermarkTracker watermark, Set<String> tables) {
        this.watermark = watermark;
        this.tables = tables;
    }

    LookupResult at(String table, long timestamp) {
        if (!tables.contains(table)) {
            return new LookupResult.UnknownTable(table);
        }
        long w = watermark.get();
        return timestamp > w ? new LookupResult.NotYetVisible(w) : new LookupResult.OutOfHistory(Long.MAX_VALUE);
    }

    @Override
    public LookupResult asOf(String table, RowKey key, long timestamp) {
        return at(table, timestamp);
    }

    @Override
    public LookupResult current(String table, RowKey key) {
        return at(table, Long.MAX_VALUE);
    }

    @Override
    public LookupResult exact(String table, RowKey key, VersionId id) {
        return at(table, id.validFrom());
    }

    @Override
    public long watermark() {
        return watermark.get();
    }

    @Override
    public boolean awaitWatermark(long timestamp, Duration timeout) throws InterruptedException {
        return watermark.await(timestamp, timeout);
    }

    @Override
    public void wantWatermark(long timestamp) {
        watermark.want(timestamp);
    }

    @Override
    public long receiptWatermark() {
        return watermark.receiptWatermark();
    }

    @Override
    public boolean awaitReceiptWatermark(long receipt, Duration timeout) throws InterruptedException {
        return watermark.awaitReceipts(receipt, timeout);
    }

    @Override
    public void wantReceiptWatermark(long receipt) {
        watermark.wantReceipts(receipt);
    }

    @Override
    public long sourceNow() {
        return watermark.sourceNow();
    }

    @Override
    public long historyStart() {
        return Long.MAX_VALUE;
    }

    @Override
    public Set<String> tables() {
        return tables;
    }
}
