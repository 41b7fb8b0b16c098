package io.asofconnect.bench;

import io.asofconnect.enrich.EnrichConfig;
import io.asofconnect.enrich.EnrichOutcome;
import io.asofconnect.enrich.EnrichmentEngine;
import io.asofconnect.lookup.RowKey;
import io.asofconnect.lookup.SourcePosition;
import io.asofconnect.lookup.Version;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.OpenOutcome;
import io.asofconnect.store.StoreBackedLookup;
import io.asofconnect.store.StoreOptions;
import io.asofconnect.store.WatermarkTracker;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.transforms.InsertField;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Records per second enriched on one thread by {@link EnrichmentEngine#tryEnrich} on schema'd (Struct)
 * records, as-of joined with a replica of {@code keys} keys × {@code versions} versions (a real
 * {@link MapDbVersionStore} behind a {@link StoreBackedLookup}, watermark past every event time), next to
 * Kafka's own {@code InsertField$Value} on the same records: the cost of the smallest schema-changing SMT, a
 * ceiling no join can beat. {@link #main} runs both and prints the ratio.
 *
 * <p>The store file is {@code <asof.bench.dir>/enrich-<keys>x<versions>.db} (default directory
 * {@code benchmarks/target-bench}); it is reused while it opens as REOPENED and carries this benchmark's
 * completion mark, and rebuilt otherwise (e.g. when the store format changed and open reports REBUILT).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g"})
@Warmup(iterations = 3, time = 5)
@Measurement(iterations = 5, time = 5)
public class EnrichBenchmark {
    static final String TABLE = "public.products";
    static final String TOPIC = "orders";
    /** Version v of key k is valid from BASE + v * STEP + k % STEP. */
    static final long BASE = 1_700_000_000_000L;
    static final long STEP = 1_000;
    /** Distinct pre-built records cycled through; a power of two. */
    static final int RECORDS = 1 << 16;
    private static final String COMPLETE = "bench.enrich.complete";

    static final Schema ROW = SchemaBuilder.struct().name("bench.public.products.Value")
            .field("id", Schema.INT64_SCHEMA)
            .field("name", Schema.STRING_SCHEMA)
            .field("price", Decimal.builder(2).optional().build())
            .field("category", Schema.OPTIONAL_STRING_SCHEMA)
            .field("updated_at", Timestamp.builder().optional().build())
            .build();

    static final Schema ORDER = SchemaBuilder.struct().name("bench.orders.Value")
            .field("order_id", Schema.INT64_SCHEMA)
            .field("product_id", Schema.INT64_SCHEMA)
            .field("quantity", Schema.INT32_SCHEMA)
            .field("note", Schema.OPTIONAL_STRING_SCHEMA)
            .build();

    @State(Scope.Benchmark)
    public static class Replica {
        @Param("1000000")
        public int keys;
        @Param("10")
        public int versions;

        MapDbVersionStore store;
        EnrichmentEngine engine;
        InsertField.Value<SinkRecord> insertField;
        SinkRecord[] records;

        @Setup(Level.Trial)
        public void open() {
            Path dir = Path.of(System.getProperty("asof.bench.dir", "benchmarks/target-bench"));
            Path file = dir.resolve("enrich-" + keys + "x" + versions + ".db");
            try {
                Files.createDirectories(dir);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot create the benchmark directory " + dir, e);
            }
            store = MapDbVersionStore.open(file, StoreOptions.defaults());
            OpenOutcome outcome = store.openOutcome();
            outcome.quarantined().ifPresent(EnrichBenchmark::deleteQuietly);
            String state = "reused";
            if (outcome.kind() != OpenOutcome.Kind.REOPENED || store.meta(COMPLETE).isEmpty()) {
                state = "built now, open said " + outcome.kind();
                if (!store.keys(TABLE).iterator().hasNext()) {
                    load();
                } else {
                    // A load that was cut short: start again from an empty file.
                    store.close();
                    deleteStore(file);
                    store = MapDbVersionStore.open(file, StoreOptions.defaults());
                    load();
                }
            }
            StoreBackedLookup lookup = new StoreBackedLookup(store, new WatermarkTracker(Long.MAX_VALUE), Set.of(TABLE));
            engine = new EnrichmentEngine(new EnrichConfig(Map.of(
                    EnrichConfig.TABLE, TABLE,
                    EnrichConfig.KEY_FIELDS, "product_id",
                    EnrichConfig.TIME_SOURCE, "RECORD_TIMESTAMP",
                    EnrichConfig.ON_MISS, "FAIL")), lookup);
            insertField = new InsertField.Value<>();
            insertField.configure(Map.of("static.field", "source", "static.value", "bench"));
            records = records(keys, versions);
            requireEnriched(engine.tryEnrich(records[0]));
            System.out.printf("%nstore %s (%s): %d keys x %d versions, %d MB%n", file.getFileName(), state, keys,
                    versions, sizeMb(file));
        }

        private void load() {
            long started = System.nanoTime();
            long puts = 0;
            for (int k = 0; k < keys; k++) {
                RowKey key = RowKey.of((long) k);
                for (int v = 0; v < versions; v++) {
                    store.put(TABLE, key, new Version(BASE + v * STEP + k % STEP,
                            new SourcePosition(1L + (long) v * keys + k, 0), row(k, v)));
                    if (++puts % 50_000 == 0) {
                        store.commit();
                    }
                }
            }
            store.setMeta(COMPLETE, "true");
            store.commit();
            double secs = (System.nanoTime() - started) / 1e9;
            System.out.printf("%nloaded %d versions in %.1f s (%.0f puts/s)%n", puts, secs, puts / secs);
        }

        @TearDown(Level.Trial)
        public void close() {
            engine.close();
            insertField.close();
            store.close();
        }
    }

    /** Each thread walks the shared records from its own random start. */
    @State(Scope.Thread)
    public static class Cursor {
        int next = new SplittableRandom().nextInt(RECORDS);

        SinkRecord next(SinkRecord[] records) {
            next = (next + 1) & (RECORDS - 1);
            return records[next];
        }
    }

    @Benchmark
    @Threads(1)
    public EnrichOutcome<SinkRecord> asOfEnrich(Replica r, Cursor c) {
        return r.engine.tryEnrich(c.next(r.records));
    }

    @Benchmark
    @Threads(1)
    public SinkRecord kafkaInsertField(Replica r, Cursor c) {
        return r.insertField.apply(c.next(r.records));
    }

    static Struct row(int k, int v) {
        return new Struct(ROW).put("id", (long) k).put("name", "product " + k + " rev " + v)
                .put("price", BigDecimal.valueOf(100L * k + v, 2)).put("category", "cat-" + (k % 97))
                .put("updated_at", new java.util.Date(BASE + v * STEP));
    }

    /** Orders at random products and random times inside the history (each a hit on some version). */
    static SinkRecord[] records(int keys, int versions) {
        SplittableRandom random = new SplittableRandom(42);
        SinkRecord[] out = new SinkRecord[RECORDS];
        for (int i = 0; i < RECORDS; i++) {
            long product = random.nextInt(keys);
            long time = BASE + STEP + random.nextLong((versions - 1) * STEP);
            Struct value = new Struct(ORDER).put("order_id", (long) i).put("product_id", product)
                    .put("quantity", 1 + random.nextInt(9)).put("note", "order " + i);
            out[i] = new SinkRecord(TOPIC, i % 2, Schema.INT64_SCHEMA, (long) i, ORDER, value, i, time,
                    org.apache.kafka.common.record.TimestampType.CREATE_TIME);
        }
        return out;
    }

    private static void requireEnriched(EnrichOutcome<SinkRecord> outcome) {
        if (!(outcome instanceof EnrichOutcome.Enriched<SinkRecord> e)
                || ((Struct) e.record().value()).getStruct("products") == null) {
            throw new IllegalStateException("the benchmark's first record was not enriched with a version: " + outcome);
        }
    }

    private static long sizeMb(Path file) {
        try {
            return Files.size(file) >> 20;
        } catch (IOException e) {
            return -1;
        }
    }

    private static void deleteStore(Path file) {
        try (var siblings = Files.list(file.toAbsolutePath().getParent())) {
            String base = file.getFileName().toString();
            siblings.filter(p -> p.getFileName().toString().startsWith(base) && !p.getFileName().toString().endsWith(".lock"))
                    .forEach(EnrichBenchmark::deleteQuietly);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete the unfinished benchmark store " + file, e);
        }
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
            // The quarantined write-ahead log files sit next to it under the same prefix.
            try (var siblings = Files.list(p.toAbsolutePath().getParent())) {
                String base = p.getFileName().toString();
                siblings.filter(s -> s.getFileName().toString().startsWith(base + ".wal")).forEach(s -> s.toFile().delete());
            }
        } catch (IOException e) {
            System.err.println("could not delete " + p + ": " + e.getMessage());
        }
    }

    /**
     * Runs both benchmarks in one JMH run and prints records/s of each and their ratio. JMH command-line
     * options (e.g. {@code -wi 1 -i 3 -p keys=100000}) are passed through.
     */
    public static void main(String[] args) throws RunnerException, CommandLineOptionException {
        CommandLineOptions cli = new CommandLineOptions(args);
        Collection<RunResult> results = new Runner(new OptionsBuilder()
                .parent(cli)
                .include(EnrichBenchmark.class.getName() + "\\.")
                .build()).run();
        double ours = score(results, "asOfEnrich");
        double peer = score(results, "kafkaInsertField");
        System.out.println();
        System.out.println("Transform alone, 1 thread, schema'd records (Struct):");
        System.out.printf("  AsOf enrichment (EnrichmentEngine.tryEnrich, MapDB replica): %,12.0f records/s%n", ours);
        System.out.printf("  Kafka InsertField$Value (static field, same records):        %,12.0f records/s%n", peer);
        System.out.printf("  ratio enrichment / InsertField: %.3f (InsertField is %.1fx faster)%n", ours / peer, peer / ours);
    }

    private static double score(Collection<RunResult> results, String method) {
        return results.stream()
                .filter(r -> r.getParams().getBenchmark().endsWith("." + method))
                .mapToDouble(r -> r.getPrimaryResult().getScore())
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no result for " + method + "; was it excluded?"));
    }
}
