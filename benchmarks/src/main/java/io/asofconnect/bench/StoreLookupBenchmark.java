package io.asofconnect.bench;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.replica.StoreBackedLookup;
import io.asofconnect.store.VersionStore;
import io.asofconnect.replica.watermark.WatermarkTracker;
import org.apache.kafka.streams.state.VersionedRecord;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;

import java.util.Collection;
import java.util.Comparator;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * As-of lookups per second on a store of {@code keys} keys × {@code versions} versions, at random keys over
 * the whole key space and random times inside the history: ours (the version store behind a
 * {@link StoreBackedLookup}, 1 and 2 threads) and, on one thread, Kafka Streams' RocksDB versioned store
 * loaded with the same versions ({@link KafkaStreamsVersions}).
 *
 * <p>Order bias: JMH runs every benchmark method in a JVM forked for it, with its own warm-up iterations, so
 * neither side inherits the other's JIT work or caches (both are warmed); the store files are the only thing
 * shared. Each fork prints the heap and disk bytes per version its store holds ({@code footprint} lines).
 * {@link #main} runs both one-thread methods for every {@code keys} given ({@code -p keys=10000,100000}) and
 * prints a {@code scale lookup-1t} line per size and the {@code bench lookup-1t} line for the largest.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g"})
public class StoreLookupBenchmark {

    @State(Scope.Benchmark)
    public static class Store {
        @Param("1000000")
        public int keys;
        @Param("10")
        public int versions;

        VersionStore store;
        StoreBackedLookup lookup;

        @Setup(Level.Trial)
        public void open() {
            long heapBefore = BenchVersions.usedHeapAfterGc();
            store = BenchVersions.openLoaded(keys, versions);
            lookup = new StoreBackedLookup(store, new WatermarkTracker(Long.MAX_VALUE), Set.of(BenchVersions.TABLE));
            long versionsHeld = (long) keys * versions;
            BenchLine.footprint("ours", "heap", versionsHeld, Math.max(0, BenchVersions.usedHeapAfterGc() - heapBefore));
            BenchLine.footprint("ours", "disk", versionsHeld, BenchVersions.diskBytes(BenchVersions.storeFile(keys, versions)));
        }

        @TearDown(Level.Trial)
        public void close() {
            store.close();
        }
    }

    @State(Scope.Benchmark)
    public static class Peer {
        @Param("1000000")
        public int keys;
        @Param("10")
        public int versions;

        KafkaStreamsVersions store;

        @Setup(Level.Trial)
        public void open() {
            long heapBefore = BenchVersions.usedHeapAfterGc();
            store = new KafkaStreamsVersions(keys, versions);
            long versionsHeld = (long) keys * versions;
            // Java heap only: RocksDB's memtables and block cache live outside it.
            BenchLine.footprint("kafka-streams", "heap", versionsHeld, Math.max(0, BenchVersions.usedHeapAfterGc() - heapBefore));
            if (store.get(0, BenchVersions.validFrom(0, 0)) == null) {
                throw new IllegalStateException("the Kafka Streams store does not hold key 0's first version");
            }
        }

        @TearDown(Level.Trial)
        public void close() {
            System.out.println();
            // On disk once closed: before, part of the data may still sit in RocksDB's memtables.
            BenchLine.footprint("kafka-streams", "disk", (long) keys * versions, store.closeAndMeasure());
            store.close();
        }
    }

    @State(Scope.Thread)
    public static class Rnd {
        final SplittableRandom random = new SplittableRandom();
    }

    private static long randomTime(SplittableRandom random, int versions) {
        return BenchVersions.BASE + random.nextLong(versions * BenchVersions.STEP);
    }

    private static LookupResult randomAsOf(Store s, Rnd r) {
        int k = r.random.nextInt(s.keys);
        return s.lookup.asOf(BenchVersions.TABLE, RowKey.of((long) k), randomTime(r.random, s.versions));
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

    @Benchmark
    @Threads(1)
    public VersionedRecord<byte[]> kafkaStreamsOneThread(Peer p, Rnd r) {
        return p.store.get(r.random.nextInt(p.keys), randomTime(r.random, p.versions));
    }

    /**
     * Runs the one-thread lookups of both stores for every {@code keys} parameter and prints the ratio; JMH
     * options pass through (e.g. {@code -p keys=10000,100000 -wi 2 -i 3}).
     */
    public static void main(String[] args) throws RunnerException, CommandLineOptionException {
        CommandLineOptions cli = new CommandLineOptions(args);
        Collection<RunResult> results = new Runner(new OptionsBuilder()
                .parent(cli)
                .include(StoreLookupBenchmark.class.getName() + "\\.(asOfOneThread|kafkaStreamsOneThread)$")
                .build()).run();
        int[] sizes = results.stream().mapToInt(r -> Integer.parseInt(r.getParams().getParam("keys"))).distinct().sorted().toArray();
        if (sizes.length == 0) {
            throw new IllegalStateException("JMH returned no results");
        }
        System.out.println();
        System.out.println("As-of lookups, 1 thread, random keys and times over the whole key space:");
        for (int keys : sizes) {
            int versions = results.stream().filter(r -> keys == Integer.parseInt(r.getParams().getParam("keys")))
                    .map(r -> Integer.parseInt(r.getParams().getParam("versions"))).max(Comparator.naturalOrder()).orElseThrow();
            double ours = JmhScores.score(results, "asOfOneThread", keys);
            double peer = JmhScores.score(results, "kafkaStreamsOneThread", keys);
            System.out.printf("  %,d keys x %d versions: ours %,.0f lookups/s   Kafka Streams versioned store %,.0f lookups/s   ratio %.2f%n",
                    keys, versions, ours, peer, ours / peer);
            BenchLine.scale("lookup-1t", (long) keys * versions, ours, peer);
            if (keys == sizes[sizes.length - 1]) {
                BenchLine.rate("lookup-1t", ours, peer);
            }
        }
    }
}
