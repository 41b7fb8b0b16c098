package io.asofconnect.replica;

import io.asofconnect.lookup.LookupResult;
import io.asofconnect.lookup.RowKey;
import io.asofconnect.replica.capture.BatchApplier;
import io.asofconnect.replica.capture.OffsetCodec;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.StoreBackedLookup;
import io.asofconnect.store.StoreOptions;
import io.asofconnect.store.WatermarkTracker;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
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
    private static final Map<String, String> PARTITION = Map.of("server", "asof_held");
    private static final Schema KEY = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build();
    private static final Schema SOURCE = SchemaBuilder.struct()
            .field("schema", Schema.STRING_SCHEMA).field("table", Schema.STRING_SCHEMA)
            .field("lsn", Schema.OPTIONAL_INT64_SCHEMA).field("ts_ms", Schema.INT64_SCHEMA)
            .field("snapshot", Schema.OPTIONAL_STRING_SCHEMA).build();
    private static final Schema ENVELOPE = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA)
            .field("source", SOURCE).field("after", SchemaBuilder.struct().optional().field("id", Schema.INT32_SCHEMA).build()).build();
    private static final Schema MESSAGE = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA)
            .field("message", SchemaBuilder.struct().field("prefix", Schema.STRING_SCHEMA).field("content", Schema.BYTES_SCHEMA).build()).build();
    private static final Schema HEARTBEAT = SchemaBuilder.struct().field("ts_ms", Schema.INT64_SCHEMA).build();

    @TempDir
    Path dir;
    private MapDbVersionStore store;
    private OffsetCodec codec;
    private BatchApplier applier;
    private WatermarkTracker tracker;
    private final List<SourceRecord> marked = new ArrayList<>();

    @BeforeEach
    void open() {
        Map<String, Object> p = new HashMap<>();
        p.put(ReplicaConfig.NAME, "held");
        p.put(ReplicaConfig.HOSTNAME, "127.0.0.1");
        p.put(ReplicaConfig.USER, "postgres");
        p.put(ReplicaConfig.DBNAME, "postgres");
        p.put(ReplicaConfig.TABLES, "public.t");
        p.put(ReplicaConfig.SLOT_NAME, "held_slot");
        p.put(ReplicaConfig.PATH, dir.toString());
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
        apply(row(100, 1), row(200, 2), row(200, 3));
        assertThat(storedLsn()).isEqualTo(100);
        assertThat(marked).extracting(CaptureHeldBackOffsetTest::lsn).containsExactly(100L);
        assertThat(store.history("public.t", RowKey.of(3))).as("held-back changes are still written").hasSize(1);

        apply(row(200, 4), row(300, 5));
        assertThat(storedLsn()).as("the run ended inside this batch").isEqualTo(200);
        assertThat(marked).extracting(CaptureHeldBackOffsetTest::lsn).containsExactly(100L, 200L);
    }

    @Test
    void aBatchThatIsOneLongRunCommitsOnceARecordWithAnotherLsnFollows() throws Exception {
        apply(row(100, 1), row(200, 9));
        assertThat(storedLsn()).isEqualTo(100);
        apply(row(500, 1), row(500, 2), row(500, 3));
        assertThat(storedLsn()).isEqualTo(100);
        // A heartbeat repeats the offset of the last change it saw: it does not end the run.
        apply(heartbeat(500));
        assertThat(storedLsn()).isEqualTo(100);
        apply(row(500, 4), probe(600));
        assertThat(storedLsn()).isEqualTo(600);
        assertThat(marked).extracting(CaptureHeldBackOffsetTest::lsn).containsExactly(100L, 500L, 600L);
    }

    @Test
    void snapshotRowsAndOtherRecordsCommitAsTheyCome() throws Exception {
        apply(snapshotRow(50, 1), snapshotRow(50, 2));
        assertThat(storedLsn()).isEqualTo(50);
        assertThat(marked).hasSize(2);
        apply(row(100, 1), probe(120));
        assertThat(storedLsn()).isEqualTo(120);
        apply(heartbeat(130));
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
        apply(snapshotRow(50, 1, 9_000L), snapshotRow(50, 2, 8_000L), probe(120, 5_000));
        StoreBackedLookup lookup = new StoreBackedLookup(store, tracker, Set.of("public.t"));
        if (tracker.get() > Long.MIN_VALUE) {
            assertThat(lookup.asOf("public.t", RowKey.of(1), tracker.get())).as("a lookup at the published watermark")
                    .isNotInstanceOf(LookupResult.OutOfHistory.class);
        }
        assertThat(lookup.asOf("public.t", RowKey.of(1), 9_050)).as("a time the history will cover is held")
                .isInstanceOf(LookupResult.NotYetVisible.class);
        assertThat(store.historyStart()).isEqualTo(Long.MAX_VALUE);
        assertThat(store.watermark()).isEqualTo(Long.MIN_VALUE);
        assertThat(tracker.get()).isEqualTo(Long.MIN_VALUE);
        // The first probe past the last read starts the history at that very watermark.
        apply(probe(130, 9_100));
        assertThat(store.historyStart()).isEqualTo(9_050L);
        assertThat(store.watermark()).isEqualTo(9_050L);
        assertThat(tracker.get()).isEqualTo(9_050L);
        assertThat(lookup.asOf("public.t", RowKey.of(1), tracker.get())).isInstanceOf(LookupResult.Found.class);
        assertThat(store.meta(BatchApplier.META_HISTORY_START_PENDING)).contains("false");
    }

    private void apply(SourceRecord... records) throws InterruptedException {
        List<RecordChangeEvent<SourceRecord>> batch = new ArrayList<>();
        for (SourceRecord r : records) {
            batch.add(() -> r);
        }
        applier.handleBatch(batch, new DebeziumEngine.RecordCommitter<>() {
            @Override
            public void markProcessed(RecordChangeEvent<SourceRecord> record) {
                marked.add(record.record());
            }

            @Override
            public void markBatchFinished() {
            }

            @Override
            public void markProcessed(RecordChangeEvent<SourceRecord> record, DebeziumEngine.Offsets sourceOffsets) {
                marked.add(record.record());
            }

            @Override
            public DebeziumEngine.Offsets buildOffsets() {
                throw new UnsupportedOperationException();
            }
        });
    }

    private long storedLsn() {
        assertThat(store.offsets()).hasSize(1);
        return ((Number) codec.decodeValue(store.offsets().values().iterator().next()).get("lsn")).longValue();
    }

    private static long lsn(SourceRecord r) {
        return ((Number) r.sourceOffset().get("lsn")).longValue();
    }

    private static Map<String, Object> offset(long lsn) {
        return Map.of("lsn", lsn, "lsn_proc", lsn, "txId", 7L, "ts_usec", 1_000L);
    }

    private static SourceRecord row(long lsn, int id) {
        return change(lsn, id, null, offset(lsn));
    }

    private static SourceRecord snapshotRow(long lsn, int id) {
        return snapshotRow(lsn, id, 1L);
    }

    private static SourceRecord snapshotRow(long lsn, int id, long readAt) {
        Map<String, Object> off = new HashMap<>(offset(lsn));
        off.put("snapshot", "INITIAL");
        return change(lsn, id, "true", off, readAt);
    }

    private static SourceRecord change(long lsn, int id, String snapshot, Map<String, Object> offset) {
        return change(lsn, id, snapshot, offset, 1L);
    }

    private static SourceRecord change(long lsn, int id, String snapshot, Map<String, Object> offset, long tsMs) {
        Struct source = new Struct(SOURCE).put("schema", "public").put("table", "t").put("lsn", lsn).put("ts_ms", tsMs).put("snapshot", snapshot);
        Struct value = new Struct(ENVELOPE).put("op", snapshot == null ? "c" : "r").put("source", source)
                .put("after", new Struct(ENVELOPE.field("after").schema()).put("id", id));
        return new SourceRecord(PARTITION, offset, "t", KEY, new Struct(KEY).put("id", id), ENVELOPE, value);
    }

    private static SourceRecord probe(long lsn) {
        return probe(lsn, 5_000);
    }

    private static SourceRecord probe(long lsn, long probeTime) {
        Struct m = new Struct(MESSAGE.field("message").schema()).put("prefix", "asof-connect.watermark.held")
                .put("content", Long.toString(probeTime).getBytes(StandardCharsets.UTF_8));
        return new SourceRecord(PARTITION, offset(lsn), "m", null, null, MESSAGE, new Struct(MESSAGE).put("op", "m").put("message", m));
    }

    private static SourceRecord heartbeat(long lsn) {
        return new SourceRecord(PARTITION, offset(lsn), "hb", null, null, HEARTBEAT, new Struct(HEARTBEAT).put("ts_ms", 1L));
    }
}
