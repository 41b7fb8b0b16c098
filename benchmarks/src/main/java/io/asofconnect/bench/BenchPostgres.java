package io.asofconnect.bench;

import io.asofconnect.replica.config.ReplicaConfig;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

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
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The source database the replica harnesses share: an embedded Postgres with logical decoding in a work
 * directory of its own (deleted on close), a products table of N rows, bulk updates of it in transactions of
 * {@value #UPDATE_TX_ROWS} rows, and the replica properties that point at it.
 */
final class BenchPostgres implements AutoCloseable {
    static final int UPDATE_TX_ROWS = 10_000;
    private static final int INSERT_TX_ROWS = 100_000;

    private final Path work;
    private final EmbeddedPostgres pg;

    BenchPostgres(String name) throws IOException {
        Path base = BenchVersions.dir().toAbsolutePath();
        work = Files.createDirectories(base.resolve(name + "-" + System.currentTimeMillis()));
        System.out.printf("work directory %s%n", work);
        pg = EmbeddedPostgres.builder()
                .setPort(freePort())
                .setDataDirectory(work.resolve("pg-data"))
                .setServerConfig("listen_addresses", "127.0.0.1")
                .setServerConfig("wal_level", "logical")
                .setServerConfig("max_replication_slots", "10")
                .setServerConfig("max_wal_senders", "10")
                .setServerConfig("max_wal_size", "4GB")
                .setServerConfig("log_min_messages", "warning")
                // Postgres' default, which embedded Postgres turns off: a commit (a watermark probe's included) flushes WAL.
                .setServerConfig("synchronous_commit", "on")
                .start();
    }

    Path work() {
        return work;
    }

    /** A new connection to the database, as its superuser. */
    Connection connect() throws SQLException {
        return pg.getPostgresDatabase().getConnection();
    }

    /** Creates {@code table} (id, name, price, category, updated_at) holding ids 0..n-1. */
    void createAndLoad(String table, int n) throws SQLException {
        long started = System.nanoTime();
        try (Connection c = pg.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + table + " (id bigint PRIMARY KEY, name text NOT NULL, price numeric(12,2),"
                    + " category text, updated_at timestamp)");
            try (PreparedStatement insert = c.prepareStatement("INSERT INTO " + table
                    + " SELECT g, 'product ' || g, (g % 10000) / 100.0, 'cat-' || (g % 97), timestamp '2024-01-01' + g * interval '1 second'"
                    + " FROM generate_series(?::bigint, ?::bigint) g")) {
                for (long from = 0; from < n; from += INSERT_TX_ROWS) {
                    insert.setLong(1, from);
                    insert.setLong(2, Math.min(n, from + INSERT_TX_ROWS) - 1);
                    insert.executeUpdate();
                }
            }
        }
        System.out.printf("  (source: %,d rows loaded into %s in %.1f s)%n", n, table, (System.nanoTime() - started) / 1e9);
    }

    /** Adds 1 to every row's price (and a day to updated_at): one new version of each of the n rows. */
    void updateAll(String table, int n) throws SQLException {
        long started = System.nanoTime();
        try (Connection c = pg.getPostgresDatabase().getConnection();
             PreparedStatement update = c.prepareStatement("UPDATE " + table + " SET price = price + 1,"
                     + " updated_at = updated_at + interval '1 day' WHERE id >= ? AND id < ?")) {
            for (long from = 0; from < n; from += UPDATE_TX_ROWS) {
                update.setLong(1, from);
                update.setLong(2, Math.min(n, from + UPDATE_TX_ROWS));
                update.executeUpdate();
            }
        }
        System.out.printf("  (source: %,d rows of %s updated in %.1f s)%n", n, table, (System.nanoTime() - started) / 1e9);
    }

    /**
     * Bytes of WAL the slot makes the server decode again when streaming restarts: from its restart LSN to its
     * confirmed flush LSN (the server moves the restart LSN only at a running-transactions record, logged every
     * 15 s while the server is busy, once the client has confirmed past it). -1 if there is no such slot.
     */
    long walToDecodeAgain(String slot) throws SQLException {
        try (Connection c = pg.getPostgresDatabase().getConnection();
             var ps = c.prepareStatement("SELECT pg_wal_lsn_diff(confirmed_flush_lsn, restart_lsn)::bigint"
                     + " FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(1) : -1;
            }
        }
    }

    /** The price row k was loaded with; each {@link #updateAll} adds 1. */
    static BigDecimal originalPrice(int k) {
        return BigDecimal.valueOf(k % 10_000, 2);
    }

    /** Replica properties for one table of this database, its own slot, publication and store directory. */
    Map<String, Object> replicaProps(String name, String table, Path dir) {
        Map<String, Object> p = defaultReplicaProps(name, table, dir);
        // Frequent probes, no margin: the end of a phase is seen within a tenth of a second.
        p.put(ReplicaConfig.WATERMARK_INTERVAL_MS, "100");
        p.put(ReplicaConfig.WATERMARK_SAFETY_MARGIN_MS, "0");
        return p;
    }

    /** As {@link #replicaProps}, with the replica's own defaults for everything else (probes and margin included). */
    Map<String, Object> defaultReplicaProps(String name, String table, Path dir) {
        Map<String, Object> p = new HashMap<>();
        p.put(ReplicaConfig.NAME, name);
        p.put(ReplicaConfig.HOSTNAME, "127.0.0.1");
        p.put(ReplicaConfig.PORT, Integer.toString(pg.getPort()));
        p.put(ReplicaConfig.USER, "postgres");
        p.put(ReplicaConfig.PASSWORD, "unused");
        p.put(ReplicaConfig.DBNAME, "postgres");
        p.put(ReplicaConfig.TABLES, table);
        p.put(ReplicaConfig.SLOT_NAME, name + "_slot");
        p.put(ReplicaConfig.PUBLICATION_NAME, name + "_pub");
        p.put(ReplicaConfig.PATH, dir.toString());
        return p;
    }

    @Override
    public void close() throws IOException {
        try {
            pg.close();
        } finally {
            try (Stream<Path> paths = Files.walk(work)) {
                paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot delete the work directory " + work, e);
            }
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
