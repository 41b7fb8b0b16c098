package io.asofconnect.bench;

import io.asofconnect.lookup.LookupResult;
import io.asofconnect.lookup.RowKey;
import io.asofconnect.lookup.SourcePosition;
import io.asofconnect.lookup.Version;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.StoreBackedLookup;
import io.asofconnect.store.StoreOptions;
import io.asofconnect.store.WatermarkTracker;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Timestamp;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * As-of lookups per second on a store of {@code keys} keys × {@code versions} versions, at random keys
 * and random times inside the history, with one and two reader threads.
 *
 * <p>The store is built once and reused: {@code <asof.bench.dir>/store-<keys>x<versions>-f<format>.db}
 * (a new store format gets a new file), the directory defaulting to {@code benchmarks/target-bench}
 * under the working directory. Delete it to rebuild. Run: {@code java -jar benchmarks/target/benchmarks.jar StoreLookupBenchmark -wi 2 -i 3 -f 1}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class StoreLookupBenchmark {
    static final String TABLE = "public.products";
    /** Valid-from of the first version; version v of key k is valid from BASE + v * STEP + k % STEP. */
    static final long BASE = 1_700_000_000_000L;
    static final long STEP = 1_000;
    static final Schema ROW = SchemaBuilder.struct().name("bench.public.products.Value")
            .field("id", Schema.INT64_SCHEMA)
            .field("name", Schema.STRING_SCHEMA)
            .field("price", Decimal.builder(2).optional().build())
            .field("category", Schema.OPTIONAL_STRING_SCHEMA)
            .field("updated_at", Timestamp.builder().optional().build())
            .build();

    @State(Scope.Benchmark)
    public static class Store {
        @Param("1000000")
        public int keys;
        @Param("10")
        public int versions;

        MapDbVersionStore store;
        StoreBackedLookup lookup;

        @Setup(Level.Trial)
        public void open() throws IOException {
            Path dir = Path.of(System.getProperty("asof.bench.dir", "benchmarks/target-bench"));
            Files.createDirectories(dir);
            Path file = dir.resolve("store-" + keys + "x" + versions + "-f" + MapDbVersionStore.FORMAT_VERSION + ".db");
            store = MapDbVersionStore.open(file, StoreOptions.defaults());
            if (store.meta("bench.complete").isEmpty()) {
                load();
            }
            WatermarkTracker watermark = new WatermarkTracker(Long.MAX_VALUE);
            lookup = new StoreBackedLookup(store, watermark, Set.of(TABLE));
            System.gc();
            Runtime rt = Runtime.getRuntime();
            System.out.printf("%nstore %s: %d keys x %d versions, file %d MB, heap used after load %d MB%n",
                    file.getFileName(), keys, versions, Files.size(file) >> 20, (rt.totalMemory() - rt.freeMemory()) >> 20);
        }

        private void load() {
            long started = System.nanoTime();
            long puts = 0;
            for (int k = 0; k < keys; k++) {
                RowKey key = RowKey.of(k);
                for (int v = 0; v < versions; v++) {
                    store.put(TABLE, key, new Version(BASE + v * STEP + k % STEP, new SourcePosition(1L + (long) v * keys + k, 0), row(k, v)));
                    if (++puts % 50_000 == 0) {
                        store.commit();
                    }
                }
            }
            store.setMeta("bench.complete", "true");
            store.commit();
            double secs = (System.nanoTime() - started) / 1e9;
            System.out.printf("%nloaded %d versions in %.1f s (%.0f puts/s)%n", puts, secs, puts / secs);
        }

        static Struct row(int k, int v) {
            return new Struct(ROW).put("id", (long) k).put("name", "product " + k + " rev " + v)
                    .put("price", BigDecimal.valueOf(100L * k + v, 2)).put("category", "cat-" + (k % 97))
                    .put("updated_at", new java.util.Date(BASE + v * STEP));
        }

        @TearDown(Level.Trial)
        public void close() {
            store.close();
        }
    }

    @State(Scope.Thread)
    public static class Rnd {
        final SplittableRandom random = new SplittableRandom();
    }

    private static LookupResult randomAsOf(Store s, Rnd r) {
        int k = r.random.nextInt(s.keys);
        long t = BASE + r.random.nextLong(s.versions * STEP);
        return s.lookup.asOf(TABLE, RowKey.of(k), t);
    }

    @Benchmark
    @Threads(1)
    public LookupResult asOfOneThread(Store s, Rnd r) {
        return randomAsOf(s, r);
    }

    @Benchmark
    @Threads(2)
    public LookupResult asOfTwoThreads(Store s, Rnd r) {
        return randomAsOf(s, r);
    }
}
