package io.asofconnect.bench;

import io.asofconnect.enrich.EnrichConfig;
import io.asofconnect.enrich.EnrichOutcome;
import io.asofconnect.enrich.EnrichmentEngine;
import io.asofconnect.replica.StoreBackedLookup;
import io.asofconnect.store.VersionStore;
import io.asofconnect.replica.watermark.WatermarkTracker;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
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

import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Records per second enriched on one thread by {@link EnrichmentEngine#tryEnrich} on schema'd (Struct)
 * records, as-of joined with a replica of {@code keys} keys × {@code versions} versions (a real
 * version store behind a {@link StoreBackedLookup}, watermark past every event time), next to
 * Kafka's own {@code InsertField$Value} on the same records: the cost of the smallest schema-changing SMT, a
 * ceiling no join can beat. {@link #main} runs both and prints the ratio and the {@code bench transform} line.
 *
 * <p>The store is {@link BenchVersions#openLoaded}'s, shared with {@link StoreLookupBenchmark}. Order bias:
 * JMH forks a JVM per benchmark method, each with its own warm-up, so both sides are warmed alike.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g"})
@Warmup(iterations = 3, time = 5)
@Measurement(iterations = 5, time = 5)
public class EnrichBenchmark {
    static final String TABLE = BenchVersions.TABLE;
    static final String TOPIC = "orders";
    static final long BASE = BenchVersions.BASE;
    static final long STEP = BenchVersions.STEP;
    /** Distinct pre-built records cycled through; a power of two. */
    static final int RECORDS = 1 << 16;

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

        VersionStore store;
        EnrichmentEngine engine;
        InsertField.Value<SinkRecord> insertField;
        SinkRecord[] records;

        @Setup(Level.Trial)
        public void open() {
            store = BenchVersions.openLoaded(keys, versions);
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
        BenchLine.rate("transform", ours, peer);
    }

    private static double score(Collection<RunResult> results, String method) {
        int keys = results.stream().mapToInt(r -> Integer.parseInt(r.getParams().getParam("keys"))).max()
                .orElseThrow(() -> new IllegalStateException("JMH returned no results"));
        return JmhScores.score(results, method, keys);
    }
}
