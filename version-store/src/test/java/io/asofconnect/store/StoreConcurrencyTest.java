package io.asofconnect.store;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/** One writer putting and committing (and checkpointing) while readers run floor() at random keys and times. */
class StoreConcurrencyTest {
    private static final String T = "public.items";
    private static final int KEYS = 200;

    @TempDir
    Path dir;

    @Test
    void floorDuringCommitsAlwaysReturnsTheRightVersion() throws Exception {
        try (MapDbVersionStore store = MapDbVersionStore.open(dir.resolve("c.db"), StoreOptions.defaults())) {
            readDuringWrites(store);
        }
    }

    /** A threshold of one byte: every commit writes a checkpoint and switches generations while the readers read. */
    @Test
    void floorDuringCheckpointsAlwaysReturnsTheRightVersion() throws Exception {
        Path file = dir.resolve("k.db");
        try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults(), 1)) {
            readDuringWrites(store);
            assertThat(StoreFiles.dataFiles(file)).as("each commit moved to a new generation")
                    .noneMatch(p -> p.getFileName().toString().endsWith(StoreFiles.CHECKPOINT + "1"));
        }
    }

    private static void readDuringWrites(MapDbVersionStore store) throws Exception {
        {
            AtomicLong committedRound = new AtomicLong(0);
            AtomicBoolean stop = new AtomicBoolean();
            ExecutorService pool = Executors.newFixedThreadPool(3);
            try {
                Future<Long> writer = pool.submit(() -> {
                    long round = 0;
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
                    while (System.nanoTime() < deadline) {
                        round++;
                        for (int k = 0; k < KEYS; k++) {
                            store.put(T, RowKey.of(k), version(k, round));
                        }
                        store.commit();
                        committedRound.set(round);
                    }
                    stop.set(true);
                    return round;
                });
                List<Future<Long>> readers = new ArrayList<>();
                for (int r = 0; r < 2; r++) {
                    readers.add(pool.submit(() -> {
                        long reads = 0;
                        ThreadLocalRandom rnd = ThreadLocalRandom.current();
                        while (!stop.get()) {
                            long committed = committedRound.get();
                            if (committed == 0) {
                                Thread.onSpinWait();
                                continue;
                            }
                            int k = rnd.nextInt(KEYS);
                            long t = rnd.nextLong(1, committed + 1) * 10 + rnd.nextInt(10);
                            Optional<Version> v = store.floor(T, RowKey.of(k), t);
                            assertThat(v).contains(version(k, t / 10));
                            reads++;
                        }
                        return reads;
                    }));
                }
                long rounds = writer.get(30, TimeUnit.SECONDS);
                long reads = 0;
                for (Future<Long> f : readers) {
                    reads += f.get(30, TimeUnit.SECONDS);
                }
                assertThat(rounds).isGreaterThan(5);
                assertThat(reads).isGreaterThan(1000);
            } finally {
                stop.set(true);
                pool.shutdownNow();
                assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
            }
        }
    }

    private static Version version(int key, long round) {
        return new Version(round * 10, new SourcePosition(round, 0), TestRows.row(key, round, round % 2 == 0));
    }
}
