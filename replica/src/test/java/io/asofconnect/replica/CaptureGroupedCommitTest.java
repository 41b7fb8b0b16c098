package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.replica.capture.BatchApplier;
import io.asofconnect.replica.capture.OffsetCodec;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.StoreOptions;
import io.asofconnect.replica.watermark.WatermarkTracker;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
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
    private final ChangeRecords records = new ChangeRecords("grouped");

    @TempDir
    Path dir;
    private MapDbVersionStore store;
    private final OffsetCodec codec = new OffsetCodec("grouped");
    private final WatermarkTracker tracker = new WatermarkTracker(Long.MIN_VALUE);
    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final AppliedBatches batches = new AppliedBatches();
    private BatchApplier applier;

    /** A store and consumer committing every {@code maxRecords} records, or after 60 s of the test's clock. */
    private void open(int maxRecords) {
        store = MapDbVersionStore.open(dir.resolve("grouped.mapdb"), StoreOptions.defaults());
        applier = new BatchApplier(config(maxRecords), store, tracker, codec, clock::get);
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
        apply(records.row(100, 1), records.row(110, 2));
        apply(records.row(120, 3), records.row(130, 4));
        assertThat(store.history("public.t", RowKey.of(3))).as("applied, uncommitted").hasSize(1);
        assertThat(store.offsets()).as("no offset before the commit").isEmpty();
        assertThat(batches.marked()).as("nothing reported processed before the commit").isEmpty();

        apply(records.row(140, 5), records.row(150, 6));
        assertThat(storedLsn()).as("the sixth record commits the group").isEqualTo(140);
        assertThat(batches.marked()).extracting(ChangeRecords::lsn).containsExactly(100L, 120L, 140L);
    }

    @Test
    void theIntervalCommitsAGroupThatStaysBelowItsSize() throws Exception {
        open(1000);
        apply(records.row(100, 1), records.row(105, 2));
        clock.addAndGet(59_999);
        apply(records.row(110, 3), records.row(115, 4));
        assertThat(store.offsets()).isEmpty();
        clock.addAndGet(1);
        apply(records.row(120, 5), records.row(125, 6));
        assertThat(storedLsn()).isEqualTo(120);
        assertThat(batches.marked()).extracting(ChangeRecords::lsn).containsExactly(100L, 110L, 120L);
    }

    @Test
    void aProbeCommitsAtOnceAndTheWatermarkIsPublishedOnlyWithTheCommit() throws Exception {
        open(1000);
        apply(records.row(100, 1), records.row(110, 2));
        assertThat(tracker.get()).isEqualTo(Long.MIN_VALUE);
        apply(records.probe(120, 5_000));
        assertThat(storedLsn()).isEqualTo(120);
        assertThat(store.watermark()).isEqualTo(5_000 - 50);
        assertThat(tracker.get()).as("published with the commit that holds the changes before it").isEqualTo(store.watermark());
        assertThat(batches.marked()).extracting(ChangeRecords::lsn).containsExactly(100L, 120L);
    }

    @Test
    void aStoreReopenedBetweenTwoCommitsResumesAtTheFirstAndTheReplayDoublesNothing() throws Exception {
        open(4);
        List<SourceRecord> stream = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            stream.add(records.row(100 + 10L * i, i));
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
        batches.forgetMarked();
        applier = new BatchApplier(config(4), store, tracker, codec, clock::get);
        // The engine resumes strictly after the committed offset: key 3 (held back, but committed) comes again.
        apply(stream.subList(3, 6));
        apply(stream.subList(6, 10));
        assertThat(storedLsn()).isEqualTo(180);
        for (int i = 0; i < 10; i++) {
            assertThat(store.history("public.t", RowKey.of(i))).as("key %d exactly once", i).hasSize(1);
        }
        assertThat(batches.marked()).extracting(ChangeRecords::lsn).containsExactly(130L, 140L, 160L, 170L, 180L);
    }

    @Test
    void aFailedBatchDiscardsTheWholeUncommittedGroup() throws Exception {
        open(1000);
        apply(records.row(100, 1), records.row(105, 2));
        clock.addAndGet(60_000);
        apply(records.row(110, 3), records.row(115, 4));
        assertThat(storedLsn()).isEqualTo(110);
        apply(records.row(120, 5), records.row(125, 6));
        assertThatThrownBy(() -> apply(records.nullKeyRow(130))).hasMessageContaining("is null");
        assertThat(store.history("public.t", RowKey.of(5))).as("the earlier batch of the group is gone too").isEmpty();
        assertThat(storedLsn()).isEqualTo(110);
        // A restart's own commit (of its metadata) must not make the discarded versions durable.
        store.setMeta("probe", "x");
        store.commit();
        assertThat(store.history("public.t", RowKey.of(5))).isEmpty();
        assertThat(batches.marked()).extracting(ChangeRecords::lsn).containsExactly(100L, 110L);
    }

    @Test
    void aSnapshotTakenAgainInsideOneGroupFailsTheBatch() throws Exception {
        open(1000);
        apply(records.snapshotRow(50, 1), records.snapshotRow(50, 2));
        assertThat(store.offsets()).isEmpty();
        assertThatThrownBy(() -> apply(records.snapshotRow(70, 1))).isInstanceOf(ConnectException.class)
                .hasMessageContaining("initial snapshot was interrupted");
        assertThat(store.history("public.t", RowKey.of(2))).as("the interrupted run's rows are discarded").isEmpty();
    }

    /** The replica's options: a commit every {@code maxRecords} records or every 60 s. */
    private ReplicaConfig config(int maxRecords) {
        Map<String, Object> p = CaptureOptions.of("grouped", dir);
        p.put(ReplicaConfig.COMMIT_INTERVAL_MS, "60000");
        p.put(ReplicaConfig.COMMIT_MAX_RECORDS, Integer.toString(maxRecords));
        return new ReplicaConfig(p);
    }

    private void apply(SourceRecord... batch) throws InterruptedException {
        apply(List.of(batch));
    }

    private void apply(List<SourceRecord> batch) throws InterruptedException {
        batches.apply(applier, batch);
    }

    private long storedLsn() {
        return AppliedBatches.storedLsn(store, codec);
    }
}
