package io.asofconnect.bench;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.replica.ReplicaHandle;
import io.asofconnect.replica.ReplicaRegistry;
import io.asofconnect.replica.capture.EngineProperties;
import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

/**
 * Replica ingest: rows per second of the initial snapshot of N rows and of streaming N updates, through the
 * real {@link ReplicaRegistry} → Replica → version store path, next to the same Debezium embedded engine
 * configuration ({@link EngineProperties#of(ReplicaConfig, String)}) feeding a consumer that only counts and acknowledges: the ceiling
 * set by Debezium itself. Both read the same table of one embedded Postgres ({@link BenchPostgres}), each
 * through its own slot.
 *
 * <p>Order of a round: load N rows into a table of its own; both snapshots; N updates (transactions of
 * {@value BenchPostgres#UPDATE_TX_ROWS} rows) committed while both are stopped, their slots holding the WAL;
 * both catch-ups. So each side streams a backlog at its own speed, never the writer's. Rounds alternate which
 * side runs first in each phase, and each side's figure is its median over the rounds (3 by default): on this
 * 2-core machine one round of either side has varied by up to 2.5x within an hour, enough to flip a ratio.
 *
 * <p>Order bias: before the measured round, a warm-up round of the same phases runs on a smaller table of its
 * own ({@code public.warmup}, a third of N, between {@value #MIN_WARMUP} and {@value #MAX_WARMUP} rows) through
 * both sides, each with its own slot and store, and is discarded: both sides enter the measured round with warm
 * JIT code, so the side that runs first no longer pays for it alone. A tenth of N was too little at 100,000
 * rows: the first measured round still took 2.4 s (replica) and 1.3 s (peer) against 1.3 s and 0.8 s in the
 * third.
 *
 * <p>Heap: run it with a fixed, pre-touched heap ({@code -Xms8g -Xmx8g -XX:+AlwaysPreTouch}, as
 * {@code benchmarks/run-all} does). On this virtual machine the first touch of memory the JVM has not used
 * before costs system time, and a heap growing by the gigabytes the engine allocates (Debezium builds a JSON
 * mapper per event for its metrics) made single rounds of either side up to three times slower: with a
 * default heap, one run's peer took 3.1-4.2 s for rounds the next run's took 0.8-1.0 s in. The initial heap
 * must be the maximum: with a smaller one the JVM pre-touches each expansion inside a GC pause, and the side
 * whose live data grows the heap (the replica, holding its store) took pauses of 1.4-4.3 s, so that runs of
 * 300,000 rows gave ratios of 0.20-0.25 or 0.66 by chance.
 *
 * <p>End of a phase: the peer counts the change events delivered to it (op {@code r} then {@code u}). The
 * replica's end is its watermark passing the phase's start: the watermark contract says every change committed
 * at or before it is in the store, and the first probe after the start is decoded only after the snapshot, or
 * after the whole backlog. The count is then checked outside the timed span: every key found after the snapshot,
 * every key carrying its update after streaming.
 *
 * <p>Run: {@code java -cp benchmarks/target-bench/benchmarks.jar io.asofconnect.bench.ReplicaIngestBenchmark
 * [--snapshot-only] [N] [rounds]}; prints the {@code bench ingest-snapshot} and {@code bench ingest-streaming} lines and
 * a {@code scale ingest-snapshot} line (with {@code --snapshot-only}, only the scale line: a point of the
 * cost-growth ladder).
 */
public final class ReplicaIngestBenchmark {
    static final String TABLE = "public.products";
    static final String WARMUP_TABLE = "public.warmup";
    static final int MIN_WARMUP = 10_000;
    static final int MAX_WARMUP = 100_000;
    /** Measured rounds by default; their median is reported: single rounds of either side varied up to 2.5x within an hour. */
    static final int DEFAULT_ROUNDS = 3;

    private ReplicaIngestBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        boolean snapshotOnly = args.length > 0 && args[0].equals("--snapshot-only");
        int first = snapshotOnly ? 1 : 0;
        int n = args.length > first ? Integer.parseInt(args[first].replace("_", "")) : 1_000_000;
        int rounds = args.length > first + 1 ? Integer.parseInt(args[first + 1]) : DEFAULT_ROUNDS;
        if (rounds < 1) {
            throw new IllegalArgumentException("rounds must be at least 1, not " + rounds);
        }
        System.out.printf("Replica ingest benchmark: %,d rows%s, %d measured round%s%n", n, snapshotOnly ? ", snapshot only" : "",
                rounds, rounds == 1 ? "" : "s");
        try (BenchPostgres pg = new BenchPostgres("replica-ingest")) {
            int warmup = Math.max(MIN_WARMUP, Math.min(MAX_WARMUP, n / 3));
            System.out.printf("warm-up round, %,d rows (discarded):%n", warmup);
            round(pg, "warm", WARMUP_TABLE, warmup, snapshotOnly, false);
            List<double[]> measured = new ArrayList<>();
            for (int r = 1; r <= rounds; r++) {
                // Odd rounds run the replica first in each phase, even rounds the peer: neither side always meets
                // the table's pages, the slot's first decoding or the machine's state first.
                boolean peerFirst = r % 2 == 0;
                System.out.printf("measured round %d of %d, %,d rows, %s first:%n", r, rounds, n, peerFirst ? "peer" : "replica");
                measured.add(round(pg, "bench" + r, rounds == 1 ? TABLE : TABLE + "_" + r, n, snapshotOnly, peerFirst));
            }
            double[] secs = medians(measured);

            System.out.println();
            System.out.printf("Replica ingest, %,d rows, embedded Postgres (pgoutput), same engine configuration, both sides warmed%s:%n",
                    n, rounds == 1 ? "" : ", median of " + rounds + " rounds");
            print("snapshot ", secs[0], secs[1], n);
            BenchLine.scale("ingest-snapshot", n, n / secs[0], n / secs[1]);
            if (!snapshotOnly) {
                print("streaming", secs[2], secs[3], n);
                BenchLine.rate("ingest-snapshot", n / secs[0], n / secs[1]);
                BenchLine.rate("ingest-streaming", n / secs[2], n / secs[3]);
            }
        }
    }

    /** Per column, the median over the rounds (of an even count, the mean of the middle two). */
    static double[] medians(List<double[]> rounds) {
        double[] out = new double[rounds.get(0).length];
        for (int c = 0; c < out.length; c++) {
            final int column = c;
            double[] v = rounds.stream().mapToDouble(r -> r[column]).sorted().toArray();
            out[c] = v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
        }
        return out;
    }

    /**
     * One round on {@code table}: both snapshots, then (unless snapshot only) n updates and both catch-ups, each
     * phase with the peer first when {@code peerFirst}. @return seconds of replica snapshot, peer snapshot, replica
     * streaming, peer streaming
     */
    private static double[] round(BenchPostgres pg, String prefix, String table, int n, boolean snapshotOnly, boolean peerFirst)
            throws Exception {
        Duration timeout = Duration.ofSeconds(Math.max(120, n / 500));
        pg.createAndLoad(table, n);
        Map<String, Object> replicaProps = pg.replicaProps(prefix + "_replica", table, pg.work().resolve(prefix + "-replica"));
        Map<String, Object> peerProps = pg.replicaProps(prefix + "_peer", table, pg.work().resolve(prefix + "-peer"));
        PeerEngine peer = new PeerEngine(peerProps, pg.work().resolve(prefix + "-peer-offsets.dat"));
        double[] snapshot = both(peerFirst, () -> replicaRun(replicaProps, table, n, timeout, false), () -> peer.run("r", n, timeout));
        System.out.printf("  snapshot: replica %.1f s, peer %.1f s%n", snapshot[0], snapshot[1]);
        if (snapshotOnly) {
            return snapshot;
        }
        pg.updateAll(table, n);
        double[] streaming = both(peerFirst, () -> replicaRun(replicaProps, table, n, timeout, true), () -> peer.run("u", n, timeout));
        System.out.printf("  streaming: replica %.1f s, peer %.1f s%n", streaming[0], streaming[1]);
        return new double[] {snapshot[0], snapshot[1], streaming[0], streaming[1]};
    }

    /** A timed phase of one side, in seconds. */
    private interface Phase {
        double run() throws Exception;
    }

    /** @return {replica seconds, peer seconds}, run one after the other in the order asked */
    private static double[] both(boolean peerFirst, Phase replica, Phase peer) throws Exception {
        if (peerFirst) {
            double p = peer.run();
            return new double[] {replica.run(), p};
        }
        double r = replica.run();
        return new double[] {r, peer.run()};
    }

    private static void print(String phase, double replicaSecs, double peerSecs, int n) {
        System.out.printf("  %s  replica (Debezium -> version store): %,10.0f rows/s (%.1f s)   Debezium, no-op consumer: %,10.0f rows/s (%.1f s)   ratio %.2f%n",
                phase, n / replicaSecs, replicaSecs, n / peerSecs, peerSecs, peerSecs / replicaSecs);
    }

    /** @return seconds from acquiring the replica until its watermark passed the start, every row verified after */
    private static double replicaRun(Map<String, Object> props, String table, int n, Duration timeout, boolean updated)
            throws InterruptedException {
        long startMillis = System.currentTimeMillis();
        long started = System.nanoTime();
        try (ReplicaHandle replica = ReplicaRegistry.acquire(props)) {
            if (!replica.watermark().await(startMillis, timeout)) {
                throw new IllegalStateException("the replica's watermark did not pass the start within " + timeout
                        + "; health: " + replica.health());
            }
            double secs = (System.nanoTime() - started) / 1e9;
            verify(replica, table, n, updated);
            return secs;
        }
    }

    /** Every key present, and after streaming every key carrying its update (price + 1). */
    private static void verify(ReplicaHandle replica, String table, int n, boolean updated) {
        for (int k = 0; k < n; k++) {
            LookupResult r = replica.current(table, RowKey.of((long) k));
            if (!(r instanceof LookupResult.Found f)) {
                throw new IllegalStateException("key " + k + " is not in the replica: " + r);
            }
            BigDecimal price = (BigDecimal) f.version().row().get("price");
            if (updated && (price == null || price.compareTo(BenchPostgres.originalPrice(k).add(BigDecimal.ONE)) != 0)) {
                throw new IllegalStateException("key " + k + " does not carry its update in the replica");
            }
        }
    }

    /** Debezium's embedded engine with the replica's engine properties, a file offset store and a counting consumer. */
    static final class PeerEngine {
        private final Properties props;

        PeerEngine(Map<String, Object> replicaProps, Path offsetFile) {
            props = EngineProperties.of(new ReplicaConfig(replicaProps), "org.apache.kafka.connect.storage.FileOffsetBackingStore");
            props.setProperty("offset.storage.file.filename", offsetFile.toString());
        }

        /** @return seconds from building the engine until {@code n} events of {@code op} were delivered */
        double run(String op, int n, Duration timeout) throws Exception {
            CountDownLatch done = new CountDownLatch(1);
            AtomicLong seen = new AtomicLong();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            long started = System.nanoTime();
            DebeziumEngine<RecordChangeEvent<SourceRecord>> engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
                    .using(props)
                    .notifying((records, committer) -> {
                        for (RecordChangeEvent<SourceRecord> e : records) {
                            if (e.record().value() instanceof Struct v && v.schema().field("op") != null
                                    && op.equals(v.getString("op")) && seen.incrementAndGet() == n) {
                                done.countDown();
                            }
                            committer.markProcessed(e);
                        }
                        committer.markBatchFinished();
                    })
                    .using((DebeziumEngine.CompletionCallback) (success, message, error) -> {
                        if (!success) {
                            failure.set(error != null ? error : new IllegalStateException(message));
                            done.countDown();
                        }
                    })
                    .build();
            ExecutorService executor = Executors.newSingleThreadExecutor();
            try {
                executor.execute(engine);
                if (!done.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("the peer engine delivered " + seen.get() + " of " + n + " '" + op
                            + "' events within " + timeout);
                }
                if (failure.get() != null) {
                    throw new IllegalStateException("the peer engine stopped", failure.get());
                }
                return (System.nanoTime() - started) / 1e9;
            } finally {
                engine.close();
                executor.shutdown();
                if (!executor.awaitTermination(60, TimeUnit.SECONDS)) {
                    executor.shutdownNow();
                }
            }
        }
    }
}
