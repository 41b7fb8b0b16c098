package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * FAULTS 11 and 15 in one process: the source's backends are terminated during the initial snapshot, the
 * replica restarts its capture in-process and takes the snapshot again. Rows changed between the two
 * snapshots are read by the second one at valid-from BEGINNING_OF_TIME, so history must start after it.
 */
class ReplicaSnapshotRestartTest {
    private static final int ROWS = 40_000;
    private static final int UPDATED = 100;
    private static final int DELETED = UPDATED + 1;

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

    @AfterEach
    void dropSlots() {
        db.dropIdleSlots();
    }

    @Test
    void snapshotRedoneAfterTerminatedBackendsStartsHistoryAfterIt() throws Exception {
        db.exec("CREATE TABLE public.big (id int PRIMARY KEY, val text NOT NULL, pad text)",
                "INSERT INTO public.big SELECT g, 'initial', repeat('x', 100) FROM generate_series(1, " + ROWS + ") g");
        Map<String, Object> props = db.props("snaprestart", "snaprestart_slot", dir, "public.big");
        // Small batches, each committed: the first snapshot commits offsets that stop inside it long before it is through.
        props.put("replica.debezium.max.batch.size", "256");
        props.put("replica.debezium.snapshot.fetch.size", "256");
        props.put(ReplicaConfig.COMMIT_INTERVAL_MS, "0");
        AtomicBoolean reading = new AtomicBoolean(true);
        AtomicReference<String> futureValue = new AtomicReference<>();
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            Awaitility.await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(10))
                    .until(() -> h.replica().snapshotRecordsApplied() >= 2_000);
            assertThat(h.replica().snapshotRecordsApplied()).as("still inside the first snapshot").isLessThan(ROWS);
            // The first snapshot has read these rows as 'initial'; the one taken after the restart reads 'updated'.
            long updatedAt = db.commit("UPDATE public.big SET val = 'updated' WHERE id <= " + UPDATED);
            // Read by the first snapshot too, and deleted before the second: its delete is never streamed (its LSN
            // lies before the new snapshot), so only a store started over forgets it.
            db.exec("DELETE FROM public.big WHERE id = " + DELETED);
            db.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
                    + " AND backend_type IN ('client backend', 'walsender')");
            CompletableFuture<Void> reader = CompletableFuture.runAsync(() -> {
                while (reading.get()) {
                    LookupResult r = h.asOf("public.big", RowKey.of(1), updatedAt - 1);
                    if (r instanceof LookupResult.Found f && !"initial".equals(f.version().row().getString("val"))) {
                        futureValue.compareAndSet(null, f.version().row().getString("val"));
                    }
                }
            });
            long now = System.currentTimeMillis();
            assertThat(h.watermark().await(now, Duration.ofSeconds(240))).as("caught up (health %s)", h.health()).isTrue();
            reading.set(false);
            reader.get(30, TimeUnit.SECONDS);

            try (var files = java.nio.file.Files.list(dir)) {
                assertThat(files.map(f -> f.getFileName().toString())).as("the interrupted run's store was set aside")
                        .anyMatch(n -> n.contains("quarantined"));
            }
            assertThat(h.replica().snapshotRecordsApplied()).as("the snapshot was taken again, whole").isGreaterThanOrEqualTo(ROWS - 1);
            assertThat(h.current("public.big", RowKey.of(DELETED))).as("a row deleted between the two runs")
                    .isInstanceOf(LookupResult.Absent.class);
            assertThat(futureValue.get()).as("a read before the update never sees it").isNull();
            long start = h.historyStart();
            assertThat(start).as("history starts after the redone snapshot").isGreaterThan(updatedAt).isLessThanOrEqualTo(h.watermark().get());
            assertThat(h.asOf("public.big", RowKey.of(1), updatedAt - 1)).isInstanceOf(LookupResult.OutOfHistory.class);
            assertThat(h.asOf("public.big", RowKey.of(1), start - 1)).isInstanceOf(LookupResult.OutOfHistory.class);

            Map<Integer, String> inDb = new HashMap<>();
            try (Connection c = db.connect(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT id, val FROM public.big")) {
                while (rs.next()) {
                    inDb.put(rs.getInt(1), rs.getString(2));
                }
            }
            long at = h.watermark().get();
            for (Map.Entry<Integer, String> e : inDb.entrySet()) {
                LookupResult r = h.asOf("public.big", RowKey.of(e.getKey()), at);
                assertThat(r).as("key %d", e.getKey()).isInstanceOf(LookupResult.Found.class);
                assertThat(((LookupResult.Found) r).version().row().getString("val")).as("key %d", e.getKey()).isEqualTo(e.getValue());
            }
        } finally {
            reading.set(false);
        }
    }
}
