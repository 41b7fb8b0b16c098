package io.asofconnect.bench;

import io.asofconnect.lookup.LookupResult;
import io.asofconnect.lookup.RowKey;
import io.asofconnect.replica.ReplicaConfig;
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
import java.util.Comparator;
import java.util.HashMap;
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
 * configuration ({@link EngineProperties#of}) feeding a consumer that only counts and acknowledges: the ceiling
 * set by Debezium itself. Both read the same table of one embedded Postgres ({@link BenchPostgres}), each
 * through its own slot.
 *
 * <p>Order: load N rows; replica snapshot; peer snapshot; N updates (transactions of
 * {@value BenchPostgres#UPDATE_TX_ROWS} rows) committed while both are stopped, their slots holding the WAL;
 * replica catch-up; peer catch-up. So each side streams a backlog at its own speed, never the writer's.
 *
 * <p>Order bias: before the measured round, a warm-up round of the same phases runs on a smaller table of its
 * own ({@code public.warmup}, a tenth of N, at least {@value #MIN_WARMUP} rows) through both sides, each with
 * its own slot and store, and is discarded: both sides enter the measured round with warm JIT code, so the
 * side that runs first no longer pays for it alone.
 *
 * <p>End of a phase: the peer counts the change events delivered to it (op {@code r} then {@code u}). The
 * replica's end is its watermark passing the phase's start: the watermark contract says every change committed
 * at or before it is in the store, and the first probe after the start is decoded only after the snapshot, or
 * after the whole backlog. The count is then checked outside the timed span: every key found after the snapshot,
 * every key carrying its update after streaming.
 *
 * <p>Run: {@code java -cp benchmarks/target-bench/benchmarks.jar io.asofconnect.bench.ReplicaIngestBenchmark
 * [--snapshot-only] [N]}; prints the {@code bench ingest-snapshot} and {@code bench ingest-streaming} lines and
 * a {@code scale ingest-snapshot} line (with {@code --snapshot-only}, only the scale line: a point of the
 * cost-growth ladder).
 */
public final class ReplicaIngestBenchmark {
    static final String TABLE = "public.products";
    static final String WARMUP_TABLE = "public.warmup";
    static final int MIN_WARMUP = 10_000;
    static final int MAX_WARMUP = 100_000;

    private ReplicaIngestBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        boolean snapshotOnly = args.length > 0 && args[0].equals("--snapshot-only");
        int first = snapshotOnly ? 1 : 0;
        int n = args.length > first ? Integer.parseInt(args[first].replace("_", "")) : 1_000_000;
        System.out.printf("Replica ingest benchmark: %,d rows%s%n", n, snapshotOnly ? ", snapshot only" : "");
        try (BenchPostgres pg = new BenchPostgres("replica-ingest")) {
            int warmup = Math.max(MIN_WARMUP, Math.min(MAX_WARMUP, n / 10));
            System.out.printf("warm-up round, %,d rows (discarded):%n", warmup);
            round(pg, "warm", WARMUP_TABLE, warmup, snapshotOnly);
            System.out.printf("measured round, %,d rows:%n", n);
            double[] secs = round(pg, "bench", TABLE, n, snapshotOnly);

            System.out.println();
            System.out.printf("Replica ingest, %,d rows, embedded Postgres (pgoutput), same engine configuration, both sides warmed:%n", n);
            print("snapshot ", secs[0], secs[1], n);
            BenchLine.scale("ingest-snapshot", n, n / secs[0], n / secs[1]);
            if (!snapshotOnly) {
                print("streaming", secs[2], secs[3], n);
                BenchLine.rate("ingest-snapshot", n / secs[0], n / secs[1]);
                BenchLine.rate("ingest-streaming", n / secs[2], n / secs[3]);
            }
        }
    }

    /**
     * One round on {@code table}: replica snapshot, peer snapshot, then (unless snapshot only) n updates and both
     * catch-ups. @return seconds of replica snapshot, peer snapshot, replica streaming, peer streaming
     */
    private static double[] round(BenchPostgres pg, String prefix, String table, int n, boolean snapshotOnly) throws Exception {
        Duration timeout = Duration.ofSeconds(Math.max(120, n / 500));
        pg.createAndLoad(table, n);
        Map<String, Object> replicaProps = pg.replicaProps(prefix + "_replica", table, pg.work().resolve(prefix + "-replica"));
        Map<String, Object> peerProps = pg.replicaProps(prefix + "_peer", table, pg.work().resolve(prefix + "-peer"));
        double replicaSnapshot = replicaRun(replicaProps, table, n, timeout, false);
        PeerEngine peer = new PeerEngine(peerProps, pg.work().resolve(prefix + "-peer-offsets.dat"));
        double peerSnapshot = peer.run("r", n, timeout);
        System.out.printf("  snapshot: replica %.1f s, peer %.1f s%n", replicaSnapshot, peerSnapshot);
        if (snapshotOnly) {
            return new double[] {replicaSnapshot, peerSnapshot};
        }
        pg.updateAll(table, n);
        double replicaStreaming = replicaRun(replicaProps, table, n, timeout, true);
        double peerStreaming = peer.run("u", n, timeout);
        System.out.printf("  streaming: replica %.1f s, peer %.1f s%n", replicaStreaming, peerStreaming);
        return new double[] {replicaSnapshot, peerSnapshot, replicaStreaming, peerStreaming};
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
            if (!replica.awaitWatermark(startMillis, timeout)) {
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
            props = EngineProperties.of(new ReplicaConfig(replicaProps));
            props.setProperty("offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore");
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
