package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.replica.capture.BatchApplier;
import io.asofconnect.replica.capture.OffsetCodec;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.StoreOptions;
import io.asofconnect.replica.watermark.WatermarkTracker;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The offset a batch commits never lies inside a run of streamed changes sharing one LSN (debezium/dbz#1554):
 * the run is held back until a record with another LSN follows it, and the engine is told only the committed
 * records are processed. Real records in the shape Debezium's Postgres connector emits, on a real store.
 */
class CaptureHeldBackOffsetTest {
    private final ChangeRecords records = new ChangeRecords("held");

    @TempDir
    Path dir;
    private MapDbVersionStore store;
    private OffsetCodec codec;
    private BatchApplier applier;
    private WatermarkTracker tracker;
    private final AppliedBatches batches = new AppliedBatches();

    @BeforeEach
    void open() {
        Map<String, Object> p = CaptureOptions.of("held", dir);
        // Batch by batch: these tests are about which offset one batch may commit, not about grouping commits.
        p.put(ReplicaConfig.COMMIT_INTERVAL_MS, "0");
        ReplicaConfig config = new ReplicaConfig(p);
        store = MapDbVersionStore.open(dir.resolve("held.mapdb"), StoreOptions.defaults());
        codec = new OffsetCodec("held");
        tracker = new WatermarkTracker(Long.MIN_VALUE);
        applier = new BatchApplier(config, store, tracker, codec, System::currentTimeMillis);
    }

    @AfterEach
    void close() {
        store.close();
    }

    @Test
    void aTrailingSameLsnRunIsWrittenButItsOffsetWaitsForTheNextLsn() throws Exception {
        apply(records.row(100, 1), records.row(200, 2), records.row(200, 3));
        assertThat(storedLsn()).isEqualTo(100);
        assertThat(batches.marked()).extracting(ChangeRecords::lsn).containsExactly(100L);
        assertThat(store.history("public.t", RowKey.of(3))).as("held-back changes are still written").hasSize(1);

        apply(records.row(200, 4), records.row(300, 5));
        assertThat(storedLsn()).as("the run ended inside this batch").isEqualTo(200);
        assertThat(batches.marked()).extracting(ChangeRecords::lsn).containsExactly(100L, 200L);
    }

    @Test
    void aBatchThatIsOneLongRunCommitsOnceARecordWithAnotherLsnFollows() throws Exception {
        apply(records.row(100, 1), records.row(200, 9));
        assertThat(storedLsn()).isEqualTo(100);
        apply(records.row(500, 1), records.row(500, 2), records.row(500, 3));
        assertThat(storedLsn()).isEqualTo(100);
        // A heartbeat repeats the offset of the last change it saw: it does not end the run.
        apply(records.heartbeat(500));
        assertThat(storedLsn()).isEqualTo(100);
        apply(records.row(500, 4), records.probe(600));
        assertThat(storedLsn()).isEqualTo(600);
        assertThat(batches.marked()).extracting(ChangeRecords::lsn).containsExactly(100L, 500L, 600L);
    }

    @Test
    void snapshotRowsAndOtherRecordsCommitAsTheyCome() throws Exception {
        apply(records.snapshotRow(50, 1), records.snapshotRow(50, 2));
        assertThat(storedLsn()).isEqualTo(50);
        assertThat(batches.marked()).hasSize(2);
        apply(records.row(100, 1), records.probe(120));
        assertThat(storedLsn()).isEqualTo(120);
        apply(records.heartbeat(130));
        assertThat(storedLsn()).isEqualTo(130);
    }

    @Test
    void aHistoryStartedBySnapshotIsNotEarlierThanTheSnapshotsLastReadNorAboveTheWatermark() throws Exception {
        store.setMeta(BatchApplier.META_HISTORY_START_PENDING, "true");
        store.setHistoryStart(Long.MAX_VALUE);
        store.commit();
        // The probe's time minus the safety margin (4,950) lies before the snapshot's reads (9,000): a commit just
        // before those reads is in the snapshot rows, so no time before them may be answered from those rows; and
        // a history starting above the watermark would leave times at the watermark unanswerable. So neither the
        // history start nor the watermark moves yet.
        apply(records.snapshotRow(50, 1, 9_000L), records.snapshotRow(50, 2, 8_000L), records.probe(120, 5_000));
        StoreBackedLookup lookup = new StoreBackedLookup(store, tracker, Set.of("public.t"));
        assertThat(lookup.asOf("public.t", RowKey.of(1), 4_950)).as("a lookup at the watermark the probe carries is held,"
                + " not failed as before the history").isInstanceOf(LookupResult.NotYetVisible.class);
        assertThat(lookup.asOf("public.t", RowKey.of(1), 9_050)).as("a time the history will cover is held")
                .isInstanceOf(LookupResult.NotYetVisible.class);
        assertThat(store.historyStart()).isEqualTo(Long.MAX_VALUE);
        assertThat(store.watermark()).isEqualTo(Long.MIN_VALUE);
        assertThat(tracker.get()).isEqualTo(Long.MIN_VALUE);
        // The first probe past the last read starts the history at that very watermark.
        apply(records.probe(130, 9_100));
        assertThat(store.historyStart()).isEqualTo(9_050L);
        assertThat(store.watermark()).isEqualTo(9_050L);
        assertThat(tracker.get()).isEqualTo(9_050L);
        assertThat(lookup.asOf("public.t", RowKey.of(1), tracker.get())).isInstanceOf(LookupResult.Found.class);
        assertThat(store.meta(BatchApplier.META_HISTORY_START_PENDING)).contains("false");
    }

    private void apply(SourceRecord... batch) throws InterruptedException {
        batches.apply(applier, List.of(batch));
    }

    private long storedLsn() {
        return AppliedBatches.storedLsn(store, codec);
    }
}
