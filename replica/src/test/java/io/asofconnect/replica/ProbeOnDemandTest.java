package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Probes asked for when someone waits, not left to the schedule. Here the interval is a minute, so a replica
 * that waited for its next scheduled probe would keep its readers waiting for up to that long.
 * <ul>
 *   <li>After an initial snapshot the watermark may only pass a probe stamped later than the snapshot's last
 *       read (plus the safety margin), and until it does the replica answers nothing.</li>
 *   <li>A reader holding records until the watermark passes a time says so, and gets a probe for it.</li>
 *   <li>A reader holding a record until the receipt watermark passes its receipt gets a probe sent after it, and
 *       the probe covers the receipt without the safety margin; probes of another instance of the replica do not.</li>
 * </ul>
 */
class ProbeOnDemandTest {
    /** Far below the one-minute interval, far above a snapshot of a few rows and a probe's way through the slot. */
    private static final Duration BOUND = Duration.ofSeconds(15);

    private static SourceDb db;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDb() {
        db = SourceDb.start("logical", Map.of("synchronous_commit", "on"));
    }

    @AfterAll
    static void stopDb() {
        if (db != null) {
            db.close();
        }
    }

    @Test
    void theWatermarkPassesTheStartSoonAfterTheSnapshotWithoutWaitingForTheNextScheduledProbe() throws Exception {
        db.exec("CREATE TABLE public.dims (id int PRIMARY KEY, v text)",
                "INSERT INTO public.dims SELECT g, 'v' || g FROM generate_series(1, 100) g");
        Map<String, Object> props = db.props("snapwm", "snapwm_slot", dir, "public.dims");
        props.put(ReplicaConfig.WATERMARK_INTERVAL_MS, "60000");
        long before = System.currentTimeMillis();
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            assertThat(h.watermark().await(before, BOUND))
                    .as("watermark passes the moment before the replica started within %s (health %s)", BOUND, h.health())
                    .isTrue();
        }
    }

    @Test
    void aReaderThatWantsTheWatermarkPastNowGetsAProbeForItWithoutWaitingForTheSchedule() throws Exception {
        db.exec("CREATE TABLE public.wanted (id int PRIMARY KEY, v text)", "INSERT INTO public.wanted VALUES (1, 'a')");
        Map<String, Object> props = db.props("wantwm", "wantwm_slot", dir, "public.wanted");
        props.put(ReplicaConfig.WATERMARK_INTERVAL_MS, "60000");
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            assertThat(h.watermark().await(System.currentTimeMillis(), BOUND)).as("first watermark, health %s", h.health()).isTrue();
            // Three wishes in a row, each past the watermark the previous one brought: every one needs a probe of its
            // own, so one left to the schedule would wait a minute.
            for (int i = 0; i < 3; i++) {
                long now = h.watermark().sourceNow();
                h.watermark().want(now);
                assertThat(h.watermark().await(now, BOUND))
                        .as("wish %d: the watermark passes %d within %s (now %d, health %s)", i, now, BOUND, h.watermark().get(), h.health())
                        .isTrue();
            }
        }
    }

    @Test
    void aProbeSentAfterAReceiptCoversItWithoutTheSafetyMarginAndShowsWhatWasCommittedBefore() throws Exception {
        db.exec("CREATE TABLE public.receipts (id int PRIMARY KEY, v text)", "INSERT INTO public.receipts VALUES (1, 'a')");
        try (ReplicaHandle h = startedWithAWideMargin("rcptwm", "public.receipts")) {
            for (int i = 0; i < 3; i++) {
                String value = "committed before receipt " + i;
                db.exec("UPDATE public.receipts SET v = '" + value + "' WHERE id = 1");
                long receipt = h.watermark().sourceNow();
                h.watermark().wantReceipts(receipt);
                assertThat(h.watermark().awaitReceipts(receipt, BOUND))
                        .as("receipt %d: the receipt watermark passes %d within %s (it is %d, health %s)", i, receipt, BOUND,
                                h.watermark().receiptWatermark(), h.health())
                        .isTrue();
                assertThat(h.watermark().get()).as("the watermark is still short of the receipt by the margin").isLessThan(receipt);
                LookupResult current = h.current("public.receipts", RowKey.of(1));
                assertThat(current).isInstanceOf(LookupResult.Found.class);
                assertThat(((LookupResult.Found) current).version().row().getString("v")).isEqualTo(value);
            }
        }
    }

    @Test
    void aProbeOfAnotherInstanceOfTheReplicaDoesNotCoverReceipts() throws Exception {
        db.exec("CREATE TABLE public.foreign_probe (id int PRIMARY KEY)", "INSERT INTO public.foreign_probe VALUES (1)");
        try (ReplicaHandle h = startedWithAWideMargin("fprobe", "public.foreign_probe")) {
            // What an earlier process of this replica left in the slot: its tokens are readings of another clock.
            long farAhead = h.watermark().sourceNow() + 3_600_000;
            db.exec("SELECT pg_logical_emit_message(false, 'asof-connect.watermark.fprobe', "
                    + "(extract(epoch from clock_timestamp()) * 1000)::bigint::text || ' " + farAhead + " 12345'), txid_current()");
            long receipt = h.watermark().sourceNow();
            h.watermark().wantReceipts(receipt);
            // Our own probe, sent after the forged one, comes through after it.
            assertThat(h.watermark().awaitReceipts(receipt, BOUND)).as("health %s", h.health()).isTrue();
            assertThat(h.watermark().receiptWatermark()).as("the other instance's token counts for nothing").isLessThan(farAhead - 1);
        }
    }

    /**
     * A replica on the one-minute schedule whose safety margin (5 s) is far above a probe's way through the slot, so
     * that its watermark trails every receipt a test takes; returned once its first watermark is out (that much
     * after the snapshot).
     */
    private ReplicaHandle startedWithAWideMargin(String name, String table) throws InterruptedException {
        Map<String, Object> props = db.props(name, name + "_slot", dir, table);
        props.put(ReplicaConfig.WATERMARK_INTERVAL_MS, "60000");
        props.put(ReplicaConfig.WATERMARK_SAFETY_MARGIN_MS, "5000");
        ReplicaHandle h = ReplicaRegistry.acquire(props);
        try {
            assertThat(h.watermark().await(Long.MIN_VALUE + 1, BOUND)).as("first watermark, health %s", h.health()).isTrue();
            return h;
        } catch (InterruptedException | AssertionError e) {
            h.close();
            throw e;
        }
    }
}
