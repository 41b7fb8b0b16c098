package io.asofconnect.enrich;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.replica.StoreBackedLookup;
import io.asofconnect.store.StoreOptions;
import io.asofconnect.replica.watermark.WatermarkTracker;
import org.apache.kafka.connect.data.Struct;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A real version store in a temporary directory behind the real lookup rules, fed by hand the way the
 * capture thread feeds it: put versions, commit, then publish the watermark.
 */
public final class TestReplica implements AutoCloseable {
    private final MapDbVersionStore store;
    /**
     * The test's source database clock, on which records reach the connector (read-your-writes); it starts at 0,
     * below every watermark the tests publish, so that only tests of that rule see it.
     */
    private final AtomicLong sourceClock = new AtomicLong(0);
    private final WatermarkTracker watermark = new WatermarkTracker(Long.MIN_VALUE, sourceClock::get);
    private final StoreBackedLookup lookup;
    /** The watermarks readers said they wait for, in order: what the replica would ask its prober to probe for. */
    private final List<Long> wanted = new CopyOnWriteArrayList<>();
    /** How often readers asked for a probe to pass a receipt: what the replica would ask its prober for. */
    private final java.util.concurrent.atomic.AtomicInteger receiptProbesWanted = new java.util.concurrent.atomic.AtomicInteger();
    private long lsn = 0x1000;

    public TestReplica(Path dir, String... tables) {
        this.store = MapDbVersionStore.open(dir.resolve("replica.db"), StoreOptions.defaults());
        this.lookup = new StoreBackedLookup(store, watermark, Set.of(tables));
        watermark.onWanted(wanted::add);
        watermark.onReceiptWanted(receiptProbesWanted::incrementAndGet);
    }

    public List<Long> wanted() {
        return wanted;
    }

    public int receiptProbesWanted() {
        return receiptProbesWanted.get();
    }

    public VersionLookup lookup() {
        return lookup;
    }

    /** Puts a version of {@code key} valid from {@code validFrom}, at the next source position. */
    public Version put(String table, RowKey key, long validFrom, Struct row) {
        Version v = new Version(validFrom, new SourcePosition(lsn++, 0), row);
        store.put(table, key, v);
        return v;
    }

    public Version delete(String table, RowKey key, long validFrom) {
        Version v = Version.tombstone(validFrom, new SourcePosition(lsn++, 0));
        store.put(table, key, v);
        return v;
    }

    /** Commits what was put and publishes {@code w} as the watermark, in that order, as the replica does. */
    public void commit(long w) {
        store.setWatermark(w);
        store.commit();
        watermark.advanceTo(w);
    }

    /**
     * Commits what was put and publishes that a probe of this replica sent with token {@code token} came through:
     * receipts below the token are covered, the watermark stays where it is.
     */
    public void commitProbe(long token) {
        store.commit();
        watermark.advanceReceiptsTo(token);
    }

    /** Sets the source database's clock: records handed over from now on reached the connector at {@code t}. */
    public void setSourceClock(long t) {
        sourceClock.set(t);
    }

    public void setHistoryStart(long start) {
        store.setHistoryStart(start);
        store.commit();
    }

    @Override
    public void close() {
        watermark.wakeAll();
        store.close();
    }
}
