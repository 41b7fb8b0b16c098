package io.asofconnect.replica;

import io.asofconnect.lookup.LookupResult;
import io.asofconnect.lookup.RowKey;
import io.asofconnect.lookup.Version;
import org.apache.kafka.connect.data.Struct;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/** Snapshot, streaming and as-of answers of a real replica against what the database committed. */
class ReplicaCaptureTest {
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

    /** Waits until the replica has applied everything committed up to now. */
    static void catchUp(ReplicaHandle h) throws InterruptedException {
        long now = System.currentTimeMillis();
        assertThat(h.awaitWatermark(now, Duration.ofSeconds(60)))
                .as("watermark reaches %d (health %s)", now, h.health()).isTrue();
    }

    @Test
    void snapshotThenStreamingAnswersAsOfLikeTheDatabase() throws Exception {
        db.exec("CREATE TABLE public.dim (id int PRIMARY KEY, val text NOT NULL)",
                "INSERT INTO public.dim SELECT g, 'initial-' || g FROM generate_series(1, 20) g");
        // The oracle: per key, commit millis -> value (null = absent), in commit order.
        Map<Integer, TreeMap<Long, String>> oracle = new HashMap<>();
        for (int i = 1; i <= 20; i++) {
            oracle.computeIfAbsent(i, k -> new TreeMap<>()).put(Long.MIN_VALUE, "initial-" + i);
        }
        try (ReplicaHandle h = ReplicaRegistry.acquire(db.props("basic", "basic_slot", dir, "public.dim"))) {
            catchUp(h);
            assertThat(h.historyStart()).isEqualTo(Long.MIN_VALUE);
            assertThat(h.asOf("public.dim", RowKey.of(5), 0L)).isInstanceOf(LookupResult.Found.class);

            Random rnd = new Random(42);
            long first = Long.MAX_VALUE;
            for (int tx = 0; tx < 60; tx++) {
                int id = 1 + rnd.nextInt(30);
                String val = "v" + tx;
                int kind = rnd.nextInt(10);
                long committed;
                String now;
                if (kind < 2) {
                    committed = db.commit("DELETE FROM public.dim WHERE id = " + id);
                    now = null;
                } else {
                    committed = db.commit("INSERT INTO public.dim VALUES (" + id + ", '" + val + "')"
                            + " ON CONFLICT (id) DO UPDATE SET val = excluded.val");
                    now = val;
                }
                first = Math.min(first, committed);
                // Two commits in one millisecond: the later wins, as it does in the replica (by position).
                oracle.computeIfAbsent(id, k -> new TreeMap<>()).put(committed, now);
                if (tx % 7 == 0) {
                    Thread.sleep(3);
                }
            }
            catchUp(h);
            long last = h.watermark();
            List<Long> times = new ArrayList<>();
            for (long t = first - 5; t <= last; t++) {
                times.add(t);
            }
            int checked = 0;
            for (Map.Entry<Integer, TreeMap<Long, String>> e : oracle.entrySet()) {
                for (long t : times) {
                    Map.Entry<Long, String> expected = e.getValue().floorEntry(t);
                    LookupResult r = h.asOf("public.dim", RowKey.of(e.getKey()), t);
                    String expectedVal = expected == null ? null : expected.getValue();
                    if (expectedVal == null) {
                        assertThat(r).as("key %d at %d", e.getKey(), t).isInstanceOf(LookupResult.Absent.class);
                    } else {
                        assertThat(r).as("key %d at %d", e.getKey(), t).isInstanceOf(LookupResult.Found.class);
                        assertThat(((LookupResult.Found) r).version().row().getString("val")).as("key %d at %d", e.getKey(), t)
                                .isEqualTo(expectedVal);
                    }
                    checked++;
                }
            }
            assertThat(checked).isGreaterThan(1000);
            assertThat(h.asOf("public.dim", RowKey.of(1), System.currentTimeMillis() + 60_000))
                    .isInstanceOf(LookupResult.NotYetVisible.class);
        }
        assertThat(ReplicaRegistry.references("basic")).isZero();
    }
}
