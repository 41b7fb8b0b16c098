package io.asofconnect.replica;

import io.asofconnect.lookup.RowKey;
import io.asofconnect.replica.capture.BatchApplier;
import io.asofconnect.replica.capture.OffsetCodec;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.StoreOptions;
import io.asofconnect.store.WatermarkTracker;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Commits grouped over several batches: until the commit, the versions are in the store but neither their
 * offsets, nor the watermark lookups see, nor the engine's "processed" mark (which lets it confirm the LSN to
 * the server); the commit then does all three. A store reopened between two commits resumes at the last
 * one, and replaying from there doubles nothing. Real records in the shape of Debezium's Postgres connector,
 * on a real store.
 */
class CaptureGroupedCommitTest {
    private static final Map<String, String> PARTITION = Map.of("server", "asof_grouped");
    private static final Schema KEY = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build();
    private static final Schema SOURCE = SchemaBuilder.struct()
            .field("schema", Schema.STRING_SCHEMA).field("table", Schema.STRING_SCHEMA)
            .field("lsn", Schema.OPTIONAL_INT64_SCHEMA).field("ts_ms", Schema.INT64_SCHEMA)
            .field("snapshot", Schema.OPTIONAL_STRING_SCHEMA).build();
    private static final Schema ENVELOPE = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA)
            .field("source", SOURCE).field("after", SchemaBuilder.struct().optional().field("id", Schema.INT32_SCHEMA).build()).build();
    private static final Schema NULLABLE_KEY = SchemaBuilder.struct().field("id", Schema.OPTIONAL_INT32_SCHEMA).build();
    private static final Schema MESSAGE = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA)
            .field("message", SchemaBuilder.struct().field("prefix", Schema.STRING_SCHEMA).field("content", Schema.BYTES_SCHEMA).build()).build();

    @TempDir
    Path dir;
    private MapDbVersionStore store;
    private final OffsetCodec codec = new OffsetCodec("grouped");
    private final WatermarkTracker tracker = new WatermarkTracker(Long.MIN_VALUE);
    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final List<SourceRecord> marked = new ArrayList<>();
    private BatchApplier applier;

    /** A store and consumer committing every {@code maxRecords} records, or after 60 s of the test's clock. */
    private void open(int maxRecords) {
        Map<String, Object> p = new HashMap<>();
        p.put(ReplicaConfig.NAME, "grouped");
        p.put(ReplicaConfig.HOSTNAME, "127.0.0.1");
        p.put(ReplicaConfig.USER, "postgres");
        p.put(ReplicaConfig.DBNAME, "postgres");
        p.put(ReplicaConfig.TABLES, "public.t");
        p.put(ReplicaConfig.SLOT_NAME, "grouped_slot");
        p.put(ReplicaConfig.PATH, dir.toString());
        p.put(ReplicaConfig.COMMIT_INTERVAL_MS, "60000");
        p.put(ReplicaConfig.COMMIT_MAX_RECORDS, Integer.toString(maxRecords));
        store = MapDbVersionStore.open(dir.resolve("grouped.mapdb"), StoreOptions.defaults());
        applier = new BatchApplier(new ReplicaConfig(p), store, tracker, codec, clock::get);
    }

    @AfterEach
    void close() {
        if (store != null) {
            store.close();
        }
    }

    // Each two-row batch below ends in a streamed change, whose offset waits for the next LSN (held back, see
    // CaptureHeldBackOffsetTest): so a batch [100, 110] settles only 100. Grouping keeps that rule.

    @Test
    void batchesWaitForTheCommitThatHoldsThemBeforeTheyAreMarkedOrTheirOffsetIsStored() throws Exception {
        open(6);
        apply(row(100, 1), row(110, 2));
        apply(row(120, 3), row(130, 4));
        assertThat(store.history("public.t", RowKey.of(3))).as("applied, uncommitted").hasSize(1);
        assertThat(store.offsets()).as("no offset before the commit").isEmpty();
        assertThat(marked).as("nothing reported processed before the commit").isEmpty();

        apply(row(140, 5), row(150, 6));
        assertThat(storedLsn()).as("the sixth record commits the group").isEqualTo(140);
        assertThat(marked).extracting(CaptureGroupedCommitTest::lsn).containsExactly(100L, 120L, 140L);
    }

    @Test
    void theIntervalCommitsAGroupThatStaysBelowItsSize() throws Exception {
        open(1000);
        apply(row(100, 1), row(105, 2));
        clock.addAndGet(59_999);
        apply(row(110, 3), row(115, 4));
        assertThat(store.offsets()).isEmpty();
        clock.addAndGet(1);
        apply(row(120, 5), row(125, 6));
        assertThat(storedLsn()).isEqualTo(120);
        assertThat(marked).extracting(CaptureGroupedCommitTest::lsn).containsExactly(100L, 110L, 120L);
    }

    @Test
    void aProbeCommitsAtOnceAndTheWatermarkIsPublishedOnlyWithTheCommit() throws Exception {
        open(1000);
        apply(row(100, 1), row(110, 2));
        assertThat(tracker.get()).isEqualTo(Long.MIN_VALUE);
        apply(probe(120, 5_000));
        assertThat(storedLsn()).isEqualTo(120);
        assertThat(store.watermark()).isEqualTo(5_000 - 50);
        assertThat(tracker.get()).as("published with the commit that holds the changes before it").isEqualTo(store.watermark());
        assertThat(marked).extracting(CaptureGroupedCommitTest::lsn).containsExactly(100L, 120L);
    }

    @Test
    void aStoreReopenedBetweenTwoCommitsResumesAtTheFirstAndTheReplayDoublesNothing() throws Exception {
        open(4);
        List<SourceRecord> stream = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            stream.add(row(100 + 10L * i, i));
        }
        apply(stream.subList(0, 2));
        apply(stream.subList(2, 4));
        assertThat(storedLsn()).as("committed with the fourth record").isEqualTo(120);
        apply(stream.subList(4, 6));
        assertThat(store.history("public.t", RowKey.of(5))).hasSize(1);
        // A crash: the third batch applied but not committed. The store reopens at the last commit.
        store.close();
        store = MapDbVersionStore.open(dir.resolve("grouped.mapdb"), StoreOptions.defaults());
        assertThat(storedLsn()).isEqualTo(120);
        assertThat(store.history("public.t", RowKey.of(5))).as("lost with the crash, read again from the slot").isEmpty();
        marked.clear();
        applier = new BatchApplier(config(4), store, tracker, codec, clock::get);
        // The engine resumes strictly after the committed offset: key 3 (held back, but committed) comes again.
        apply(stream.subList(3, 6));
        apply(stream.subList(6, 10));
        assertThat(storedLsn()).isEqualTo(180);
        for (int i = 0; i < 10; i++) {
            assertThat(store.history("public.t", RowKey.of(i))).as("key %d exactly once", i).hasSize(1);
        }
        assertThat(marked).extracting(CaptureGroupedCommitTest::lsn).containsExactly(130L, 140L, 160L, 170L, 180L);
    }

    @Test
    void aFailedBatchDiscardsTheWholeUncommittedGroup() throws Exception {
        open(1000);
        apply(row(100, 1), row(105, 2));
        clock.addAndGet(60_000);
        apply(row(110, 3), row(115, 4));
        assertThat(storedLsn()).isEqualTo(110);
        apply(row(120, 5), row(125, 6));
        assertThatThrownBy(() -> apply(nullKeyRow(130))).hasMessageContaining("is null");
        assertThat(store.history("public.t", RowKey.of(5))).as("the earlier batch of the group is gone too").isEmpty();
        assertThat(storedLsn()).isEqualTo(110);
        // A restart's own commit (of its metadata) must not make the discarded versions durable.
        store.setMeta("probe", "x");
        store.commit();
        assertThat(store.history("public.t", RowKey.of(5))).isEmpty();
        assertThat(marked).extracting(CaptureGroupedCommitTest::lsn).containsExactly(100L, 110L);
    }

    @Test
    void aSnapshotTakenAgainInsideOneGroupFailsTheBatch() throws Exception {
        open(1000);
        apply(snapshotRow(50, 1), snapshotRow(50, 2));
        assertThat(store.offsets()).isEmpty();
        assertThatThrownBy(() -> apply(snapshotRow(70, 1))).isInstanceOf(ConnectException.class)
                .hasMessageContaining("initial snapshot was interrupted");
        assertThat(store.history("public.t", RowKey.of(2))).as("the interrupted run's rows are discarded").isEmpty();
    }

    private ReplicaConfig config(int maxRecords) {
        Map<String, Object> p = new HashMap<>();
        p.put(ReplicaConfig.NAME, "grouped");
        p.put(ReplicaConfig.HOSTNAME, "127.0.0.1");
        p.put(ReplicaConfig.USER, "postgres");
        p.put(ReplicaConfig.DBNAME, "postgres");
        p.put(ReplicaConfig.TABLES, "public.t");
        p.put(ReplicaConfig.SLOT_NAME, "grouped_slot");
        p.put(ReplicaConfig.PATH, dir.toString());
        p.put(ReplicaConfig.COMMIT_INTERVAL_MS, "60000");
        p.put(ReplicaConfig.COMMIT_MAX_RECORDS, Integer.toString(maxRecords));
        return new ReplicaConfig(p);
    }

    private void apply(SourceRecord... records) throws InterruptedException {
        apply(List.of(records));
    }

    private void apply(List<SourceRecord> records) throws InterruptedException {
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
        Map<String, Object> off = new HashMap<>(offset(lsn));
        off.put("snapshot", "INITIAL");
        return change(lsn, id, "true", off);
    }

    private static SourceRecord change(long lsn, int id, String snapshot, Map<String, Object> offset) {
        Struct source = new Struct(SOURCE).put("schema", "public").put("table", "t").put("lsn", lsn).put("ts_ms", 1L).put("snapshot", snapshot);
        Struct value = new Struct(ENVELOPE).put("op", snapshot == null ? "c" : "r").put("source", source)
                .put("after", new Struct(ENVELOPE.field("after").schema()).put("id", id));
        return new SourceRecord(PARTITION, offset, "t", KEY, new Struct(KEY).put("id", id), ENVELOPE, value);
    }

    /** A change whose key column is null: the mapper rejects it, failing its batch. */
    private static SourceRecord nullKeyRow(long lsn) {
        Struct source = new Struct(SOURCE).put("schema", "public").put("table", "t").put("lsn", lsn).put("ts_ms", 1L);
        Struct value = new Struct(ENVELOPE).put("op", "c").put("source", source)
                .put("after", new Struct(ENVELOPE.field("after").schema()).put("id", 0));
        return new SourceRecord(PARTITION, offset(lsn), "t", NULLABLE_KEY, new Struct(NULLABLE_KEY), ENVELOPE, value);
    }

    private static SourceRecord probe(long lsn, long probeTime) {
        Struct m = new Struct(MESSAGE.field("message").schema()).put("prefix", "asof-connect.watermark.grouped")
                .put("content", Long.toString(probeTime).getBytes(StandardCharsets.UTF_8));
        return new SourceRecord(PARTITION, offset(lsn), "m", null, null, MESSAGE, new Struct(MESSAGE).put("op", "m").put("message", m));
    }
}
