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
 * real {@link ReplicaRegistry} → Replica → MapDB path, next to the same Debezium embedded engine
 * configuration ({@link EngineProperties#of}) feeding a consumer that only counts and acknowledges: the ceiling
 * set by Debezium itself. Both read the same table of one embedded Postgres, each through its own slot.
 *
 * <p>Order: load N rows; replica snapshot; peer snapshot; N updates (transactions of
 * {@value #UPDATE_TX_ROWS} rows) committed while both are stopped, their slots holding the WAL; replica catch-up;
 * peer catch-up. So each side streams a backlog at its own speed, never the writer's.
 *
 * <p>End of a phase: the peer counts the change events delivered to it (op {@code r} then {@code u}). The
 * replica's end is its watermark passing the phase's start: the watermark contract says every change committed
 * at or before it is in the store, and the first probe after the start is decoded only after the snapshot, or
 * after the whole backlog. The count is then checked outside the timed span: every key found after the snapshot,
 * every key carrying its update after streaming.
 *
 * <p>Run: {@code java -cp benchmarks/target-bench/benchmarks.jar io.asofconnect.bench.ReplicaIngestBenchmark [N]}.
 */
public final class ReplicaIngestBenchmark {
    static final String TABLE = "public.products";
    static final int UPDATE_TX_ROWS = 10_000;
    static final int INSERT_TX_ROWS = 100_000;

    private ReplicaIngestBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0].replace("_", "")) : 1_000_000;
        Duration timeout = Duration.ofSeconds(Math.max(120, n / 500));
        Path base = Path.of(System.getProperty("asof.bench.dir", "benchmarks/target-bench")).toAbsolutePath();
        Path work = Files.createDirectories(base.resolve("replica-ingest-" + System.currentTimeMillis()));
        System.out.printf("Replica ingest benchmark: %,d rows, work directory %s%n", n, work);
        try (EmbeddedPostgres pg = EmbeddedPostgres.builder()
                .setPort(freePort())
                .setDataDirectory(work.resolve("pg-data"))
                .setServerConfig("listen_addresses", "127.0.0.1")
                .setServerConfig("wal_level", "logical")
                .setServerConfig("max_replication_slots", "10")
                .setServerConfig("max_wal_senders", "10")
                .setServerConfig("max_wal_size", "4GB")
                .setServerConfig("log_min_messages", "warning")
                .start()) {
            createAndLoad(pg, n);
            Map<String, Object> replicaProps = replicaProps(pg, "bench_replica", "bench_replica_slot", work.resolve("replica"));
            Map<String, Object> peerProps = replicaProps(pg, "bench_peer", "bench_peer_slot", work.resolve("peer"));
            peerProps.put(ReplicaConfig.PUBLICATION_NAME, "bench_peer_pub");

            double replicaSnapshot = replicaRun(replicaProps, n, timeout, false);
            PeerEngine peer = new PeerEngine(peerProps, work.resolve("peer-offsets.dat"));
            double peerSnapshot = peer.run("r", n, timeout);

            long updateStarted = System.nanoTime();
            update(pg, n);
            System.out.printf("  (source: %,d rows updated in %.1f s)%n", n, (System.nanoTime() - updateStarted) / 1e9);

            double replicaStreaming = replicaRun(replicaProps, n, timeout, true);
            double peerStreaming = peer.run("u", n, timeout);

            System.out.println();
            System.out.printf("Replica ingest, %,d rows, embedded Postgres (pgoutput), same engine configuration:%n", n);
            print("snapshot ", replicaSnapshot, peerSnapshot, n);
            print("streaming", replicaStreaming, peerStreaming, n);
        } finally {
            deleteTree(work);
        }
    }

    private static void print(String phase, double replicaSecs, double peerSecs, int n) {
        System.out.printf("  %s  replica (Debezium -> MapDB versions): %,10.0f rows/s (%.1f s)   Debezium, no-op consumer: %,10.0f rows/s (%.1f s)   ratio %.2f%n",
                phase, n / replicaSecs, replicaSecs, n / peerSecs, peerSecs, peerSecs / replicaSecs);
    }

    /** @return seconds from acquiring the replica until its watermark passed the start, every row verified after */
    private static double replicaRun(Map<String, Object> props, int n, Duration timeout, boolean updated)
            throws InterruptedException {
        long startMillis = System.currentTimeMillis();
        long started = System.nanoTime();
        try (ReplicaHandle replica = ReplicaRegistry.acquire(props)) {
            if (!replica.awaitWatermark(startMillis, timeout)) {
                throw new IllegalStateException("the replica's watermark did not pass the start within " + timeout
                        + "; health: " + replica.health());
            }
            double secs = (System.nanoTime() - started) / 1e9;
            verify(replica, n, updated);
            return secs;
        }
    }

    /** Every key present, and after streaming every key carrying its update (price + 1). */
    private static void verify(ReplicaHandle replica, int n, boolean updated) {
        for (int k = 0; k < n; k++) {
            LookupResult r = replica.current(TABLE, RowKey.of((long) k));
            if (!(r instanceof LookupResult.Found f)) {
                throw new IllegalStateException("key " + k + " is not in the replica: " + r);
            }
            BigDecimal price = (BigDecimal) f.version().row().get("price");
            if (updated && (price == null || price.compareTo(originalPrice(k).add(BigDecimal.ONE)) != 0)) {
                throw new IllegalStateException("key " + k + " does not carry its update in the replica");
            }
        }
    }

    static BigDecimal originalPrice(int k) {
        return BigDecimal.valueOf(k % 10_000, 2);
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

    private static Map<String, Object> replicaProps(EmbeddedPostgres pg, String name, String slot, Path dir) {
        Map<String, Object> p = new HashMap<>();
        p.put(ReplicaConfig.NAME, name);
        p.put(ReplicaConfig.HOSTNAME, "127.0.0.1");
        p.put(ReplicaConfig.PORT, Integer.toString(pg.getPort()));
        p.put(ReplicaConfig.USER, "postgres");
        p.put(ReplicaConfig.PASSWORD, "unused");
        p.put(ReplicaConfig.DBNAME, "postgres");
        p.put(ReplicaConfig.TABLES, TABLE);
        p.put(ReplicaConfig.SLOT_NAME, slot);
        p.put(ReplicaConfig.PATH, dir.toString());
        // Frequent probes, no margin: the end of a phase is seen within a tenth of a second.
        p.put(ReplicaConfig.WATERMARK_INTERVAL_MS, "100");
        p.put(ReplicaConfig.WATERMARK_SAFETY_MARGIN_MS, "0");
        return p;
    }

    private static void createAndLoad(EmbeddedPostgres pg, int n) throws SQLException {
        long started = System.nanoTime();
        try (Connection c = pg.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE public.products (id bigint PRIMARY KEY, name text NOT NULL, price numeric(12,2),"
                    + " category text, updated_at timestamp)");
            try (PreparedStatement insert = c.prepareStatement("INSERT INTO public.products"
                    + " SELECT g, 'product ' || g, (g % 10000) / 100.0, 'cat-' || (g % 97), timestamp '2024-01-01' + g * interval '1 second'"
                    + " FROM generate_series(?::bigint, ?::bigint) g")) {
                for (long from = 0; from < n; from += INSERT_TX_ROWS) {
                    insert.setLong(1, from);
                    insert.setLong(2, Math.min(n, from + INSERT_TX_ROWS) - 1);
                    insert.executeUpdate();
                }
            }
        }
        System.out.printf("  (source: %,d rows loaded in %.1f s)%n", n, (System.nanoTime() - started) / 1e9);
    }

    private static void update(EmbeddedPostgres pg, int n) throws SQLException {
        try (Connection c = pg.getPostgresDatabase().getConnection();
             PreparedStatement update = c.prepareStatement("UPDATE public.products SET price = price + 1,"
                     + " updated_at = updated_at + interval '1 day' WHERE id >= ? AND id < ?")) {
            for (long from = 0; from < n; from += UPDATE_TX_ROWS) {
                update.setLong(1, from);
                update.setLong(2, Math.min(n, from + UPDATE_TX_ROWS));
                update.executeUpdate();
            }
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete the work directory " + dir, e);
        }
    }
}
