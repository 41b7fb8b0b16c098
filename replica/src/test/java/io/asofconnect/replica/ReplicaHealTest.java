package io.asofconnect.replica;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

import static io.asofconnect.common.testing.Bytes.indexOf;
import static org.assertj.core.api.Assertions.assertThat;

/** FAULTS 20 while running: bytes of a stored row flipped under a live replica, which rebuilds itself in-process. */
class ReplicaHealTest {
    private static final int ROWS = 50;
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

    private static String value(int id) {
        return String.format("heal-marker-%04d-", id) + "v".repeat(40);
    }

    /**
     * The store answers from memory and never reads its files again once open, so bytes flipped in them under a
     * running replica cannot reach an answer: lookups stay right while the damage sits on disk, and the close
     * writes the base again from memory (a crash instead would leave the damage to the next open, which
     * quarantines and rebuilds: StoreCorruptionTest, StartupFailuresTest#corruptStoreFileIsQuarantinedAndRebuilt).
     */
    @Test
    void flippedBytesUnderARunningReplicaNeverReachAnAnswerAndARestartAnswersRight() throws Exception {
        db.exec("CREATE TABLE public.healed (id int PRIMARY KEY, val text NOT NULL)");
        for (int id = 1; id <= ROWS; id++) {
            db.exec("INSERT INTO public.healed VALUES (" + id + ", '" + value(id) + "')");
        }
        try {
            long corruptedAt;
            long updatedAt;
            try (ReplicaHandle h = ReplicaRegistry.acquire(db.props("healed", "healed_slot", dir, "public.healed"))) {
                catchUp(h);
                corruptedAt = h.watermark().get();
                int flipped = flip(dir, value(7).getBytes(StandardCharsets.UTF_8));
                assertThat(flipped).as("the row's bytes are in the store's files").isPositive();
                updatedAt = db.commit("UPDATE public.healed SET val = 'after-damage' WHERE id = 8");
                catchUp(h);
                for (int id = 1; id <= ROWS; id++) {
                    assertRightOrNoAnswer(h, id, corruptedAt, updatedAt);
                    assertThat(h.asOf("public.healed", RowKey.of(id), h.watermark().get())).as("key %d", id)
                            .isInstanceOf(LookupResult.Found.class);
                }
            }
            try (ReplicaHandle h = ReplicaRegistry.acquire(db.props("healed", "healed_slot", dir, "public.healed"))) {
                catchUp(h);
                long at = h.watermark().get();
                for (int id = 1; id <= ROWS; id++) {
                    assertRightOrNoAnswer(h, id, corruptedAt, updatedAt);
                    LookupResult r = h.asOf("public.healed", RowKey.of(id), at);
                    assertThat(r).as("key %d", id).isInstanceOf(LookupResult.Found.class);
                    assertThat(((LookupResult.Found) r).version().row().getString("val")).as("key %d", id)
                            .isEqualTo(id == 8 ? "after-damage" : value(id));
                }
            }
        } finally {
            db.exec("DROP TABLE public.healed");
        }
    }

    private static void assertRightOrNoAnswer(ReplicaHandle h, int id, long corruptedAt, long updatedAt) {
        for (long t : List.of(corruptedAt, updatedAt - 1, updatedAt, h.watermark().get())) {
            LookupResult r = h.asOf("public.healed", RowKey.of(id), t);
            if (r instanceof LookupResult.Found f) {
                String expected = id == 8 && t >= updatedAt ? "after-damage" : value(id);
                assertThat(f.version().row().getString("val")).as("key %d at %d", id, t).isEqualTo(expected);
            } else {
                assertThat(r).as("key %d at %d", id, t).isInstanceOfAny(LookupResult.OutOfHistory.class, LookupResult.NotYetVisible.class);
            }
        }
    }

    /** Flips one byte inside every occurrence of {@code marker} in the store file and its WAL; returns how many. */
    private static int flip(Path dir, byte[] marker) throws IOException {
        int count = 0;
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(p -> p.getFileName().toString().startsWith("healed.mapdb")).toList()) {
                byte[] all = Files.readAllBytes(f);
                try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
                    for (int i = indexOf(all, marker, 0); i >= 0; i = indexOf(all, marker, i + 1)) {
                        raf.seek(i + 5);
                        raf.write(all[i + 5] ^ 0x20);
                        count++;
                    }
                }
            }
        }
        return count;
    }

    private static void catchUp(ReplicaHandle h) throws InterruptedException {
        long now = System.currentTimeMillis();
        assertThat(h.watermark().await(now, Duration.ofSeconds(120))).as("watermark reaches %d (health %s)", now, h.health()).isTrue();
    }
}
