package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import org.apache.kafka.connect.errors.ConnectException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * FAULTS 16: while the replica is stopped its slot is dropped and created again, or the server removes WAL the
 * slot still needs ({@code wal_status = lost}). Either way changes are gone, so the replica never continues
 * its stored history: with {@code replica.on.gap=FAIL} it refuses to start and names the fix; with REBUILD it
 * quarantines the store, takes a new snapshot and answers nothing from before it.
 */
class CaptureSlotGapTest {
    private static SourceDb db;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDb() {
        db = SourceDb.start("logical");
    }

    @AfterAll
    static void stopDb() {
        if (db != null) {
            db.close();
        }
    }

    @Test
    void slotRecreatedWhileStoppedFailsOrRebuilds() throws Exception {
        db.exec("CREATE TABLE public.recreated (id int PRIMARY KEY, v text)", "INSERT INTO public.recreated VALUES (1, 'a'), (2, 'b')");
        Map<String, Object> p = db.props("recreated", "recreated_slot", dir, "public.recreated");
        try (ReplicaHandle h = ReplicaRegistry.acquire(p)) {
            ReplicaCaptureTest.catchUp(h);
        }
        db.exec("UPDATE public.recreated SET v = 'missed' WHERE id = 2", "SELECT pg_drop_replication_slot('recreated_slot')",
                "SELECT pg_create_logical_replication_slot('recreated_slot', 'pgoutput')");
        assertThatThrownBy(() -> ReplicaRegistry.acquire(p)).isInstanceOf(ConnectException.class)
                .hasMessageContaining("recreated_slot").hasMessageContaining("past the store's committed position")
                .hasMessageContaining(ReplicaConfig.ON_GAP + "=REBUILD");
        assertThat(ReplicaRegistry.references("recreated")).isZero();

        rebuildsWithTheMissedChange(p, "recreated", "public.recreated");
    }

    @Test
    void slotWhoseWalWasRemovedFailsOrRebuilds() throws Exception {
        db.exec("CREATE TABLE public.lost (id int PRIMARY KEY, v text)", "INSERT INTO public.lost VALUES (1, 'a'), (2, 'b')",
                "CREATE TABLE public.wal_filler (id serial PRIMARY KEY, pad text)");
        Map<String, Object> p = db.props("lost", "lost_slot", dir, "public.lost");
        try (ReplicaHandle h = ReplicaRegistry.acquire(p)) {
            ReplicaCaptureTest.catchUp(h);
        }
        db.exec("UPDATE public.lost SET v = 'missed' WHERE id = 2");
        db.exec("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'", "SELECT pg_reload_conf()");
        try {
            // Each round fills and switches a WAL segment; a checkpoint then removes segments the slot still needs.
            for (int round = 0; round < 20 && !"lost".equals(walStatus("lost_slot")); round++) {
                db.exec("INSERT INTO public.wal_filler (pad) SELECT repeat('w', 200) FROM generate_series(1, 2000)",
                        "SELECT pg_switch_wal()", "CHECKPOINT");
            }
            assertThat(walStatus("lost_slot")).isEqualTo("lost");
            assertThatThrownBy(() -> ReplicaRegistry.acquire(p)).isInstanceOf(ConnectException.class)
                    .hasMessageContaining("wal_status = lost").hasMessageContaining(ReplicaConfig.ON_GAP + "=REBUILD");
            assertThat(ReplicaRegistry.references("lost")).isZero();

            rebuildsWithTheMissedChange(p, "lost", "public.lost");
            assertThat(walStatus("lost_slot")).as("a new slot replaced the lost one").isNotEqualTo("lost");
        } finally {
            db.exec("ALTER SYSTEM RESET max_slot_wal_keep_size", "SELECT pg_reload_conf()");
        }
    }

    private static void rebuildsWithTheMissedChange(Map<String, Object> p, String name, String table) throws Exception {
        p.put(ReplicaConfig.ON_GAP, "REBUILD");
        long beforeRebuild = System.currentTimeMillis();
        try (ReplicaHandle h = ReplicaRegistry.acquire(p)) {
            ReplicaCaptureTest.catchUpAnsweringAtEveryWatermark(h, table, RowKey.of(2), h.watermark().get());
            assertThat(h.replica().snapshotRecordsApplied()).as("a new snapshot").isEqualTo(2);
            assertThat(h.historyStart()).isGreaterThanOrEqualTo(beforeRebuild - 1000);
            assertThat(h.asOf(table, RowKey.of(2), beforeRebuild - 60_000)).isInstanceOf(LookupResult.OutOfHistory.class);
            LookupResult now = h.asOf(table, RowKey.of(2), h.watermark().get());
            assertThat(now).isInstanceOf(LookupResult.Found.class);
            assertThat(((LookupResult.Found) now).version().row().getString("v")).isEqualTo("missed");
            assertThat(h.replica().store().history(table, RowKey.of(2))).as("only the snapshot's version").hasSize(1);
        }
        Path dir = Path.of(p.get(ReplicaConfig.PATH).toString());
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.map(f -> f.getFileName().toString())).anyMatch(n -> n.startsWith(name + ".mapdb.quarantined-"));
        }
    }

    private static String walStatus(String slot) {
        return db.queryString("SELECT wal_status FROM pg_replication_slots WHERE slot_name = '" + slot + "'");
    }
}
