package io.asofconnect.replica;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A watermark probe reaches the replica without waiting for the source's WAL writer. A walsender sends only
 * flushed WAL, and a logical decoding message on its own is flushed by the WAL writer alone, every
 * {@code wal_writer_delay}. Here that delay is 10 s (the most Postgres allows) and nothing else writes to the
 * source, so a probe that relied on the WAL writer would leave the watermark up to 10 s behind "now", and every
 * record held for read-your-writes with it; the probe's own commit flushes its message instead
 * ({@code synchronous_commit=on}, Postgres' default), so the watermark passes each moment within a probe or two.
 */
class WatermarkProbeFlushTest {
    /** Far below the WAL writer's 10 s, far above a probe's way through the slot (about 0.2 s here). */
    private static final Duration BOUND = Duration.ofSeconds(3);

    private static SourceDb db;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDb() {
        db = SourceDb.start("logical", Map.of("synchronous_commit", "on", "wal_writer_delay", "10000ms"));
    }

    @AfterAll
    static void stopDb() {
        if (db != null) {
            db.close();
        }
    }

    @Test
    void eachMomentIsPassedWithoutWaitingForTheWalWriter() throws Exception {
        db.exec("CREATE TABLE public.idle (id int PRIMARY KEY, v text)", "INSERT INTO public.idle VALUES (1, 'a')");
        try (ReplicaHandle h = ReplicaRegistry.acquire(db.props("idle", "idle_slot", dir, "public.idle"))) {
            ReplicaCaptureTest.catchUp(h);
            // Back to back: right after one flush by the WAL writer, the next would be 10 s away.
            for (int i = 0; i < 5; i++) {
                long now = System.currentTimeMillis();
                assertThat(h.watermark().await(now, BOUND))
                        .as("watermark passes %d within %s (moment %d; health %s)", now, BOUND, i, h.health()).isTrue();
            }
        }
    }
}
