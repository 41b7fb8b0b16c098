package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * A real Postgres for one test class, configured for logical decoding and commit timestamps, listening on TCP
 * 127.0.0.1 only (a Unix socket's lock file would outlive a killed server). It can be stopped and started again
 * on the same data directory and port.
 */
final class SourceDb implements AutoCloseable {
    private final Path dataDir;
    private final int port;
    private final Map<String, String> serverConfig;
    /** The running server; replaced by {@link #restart()}. */
    volatile EmbeddedPostgres pg;

    private SourceDb(Path dataDir, int port, Map<String, String> serverConfig) {
        this.dataDir = dataDir;
        this.port = port;
        this.serverConfig = serverConfig;
    }

    static SourceDb start(String walLevel) {
        return start(walLevel, Map.of());
    }

    /**
     * A server with {@code extra} settings on top of the defaults. Embedded Postgres runs with {@code fsync=off}
     * and {@code synchronous_commit=off}: a test that claims commits survive a server restart passes both as on.
     */
    static SourceDb start(String walLevel, Map<String, String> extra) {
        Map<String, String> config = new TreeMap<>();
        config.put("wal_level", walLevel);
        config.put("max_replication_slots", "10");
        config.put("max_wal_senders", "10");
        config.put("track_commit_timestamp", "on");
        config.put("listen_addresses", "127.0.0.1");
        config.put("unix_socket_directories", "");
        config.put("wal_sender_timeout", "5s");
        config.putAll(extra);
        try {
            SourceDb db = new SourceDb(Files.createTempDirectory("asof-source-db"), freePort(), config);
            db.startServer();
            return db;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void startServer() {
        clearStaleLock();
        try {
            EmbeddedPostgres.Builder b = EmbeddedPostgres.builder().setPort(port).setDataDirectory(dataDir).setCleanDataDirectory(false)
                    .setPGStartupWait(Duration.ofSeconds(60));
            serverConfig.forEach(b::setServerConfig);
            pg = b.start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A clean stop of the server (walsenders and backends are terminated, a checkpoint is written). */
    void stop() {
        EmbeddedPostgres running = pg;
        if (running != null) {
            try {
                running.close();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } finally {
                pg = null;
            }
        }
    }

    /**
     * A crash of the server: SIGKILL of the postmaster and every backend, no checkpoint; {@link #startAgain()}
     * then runs WAL recovery. Only commits made with {@code fsync} and {@code synchronous_commit} on survive.
     */
    void crash() {
        long postmaster = postmasterPid();
        ProcessHandle.of(postmaster).ifPresent(p -> {
            List<ProcessHandle> children = p.descendants().toList();
            p.destroyForcibly();
            children.forEach(ProcessHandle::destroyForcibly);
        });
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (ProcessHandle.of(postmaster).map(h -> h.isAlive() && !isZombie(postmaster)).orElse(false)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("postmaster " + postmaster + " still alive 20 s after SIGKILL");
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
        try {
            stop();
        } catch (RuntimeException alreadyGone) {
            // pg_ctl stop fails on a dead server; this only releases the embedded wrapper's directory lock
        }
    }

    /** Starts the server again on the same data directory and port after {@link #stop()} or {@link #crash()}. */
    void startAgain() {
        startServer();
    }

    /**
     * Dead processes are not reaped in this sandbox: a stopped postmaster can stay a zombie whose pid is still in
     * postmaster.pid, and Postgres then refuses to start. The lock goes when its owner is gone or a zombie.
     */
    private void clearStaleLock() {
        Path pidFile = dataDir.resolve("postmaster.pid");
        if (!Files.exists(pidFile)) {
            return;
        }
        long pid = postmasterPid();
        boolean alive = ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
        if (!alive || isZombie(pid)) {
            try {
                Files.deleteIfExists(pidFile);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    private long postmasterPid() {
        Path pidFile = dataDir.resolve("postmaster.pid");
        try {
            return Long.parseLong(Files.readAllLines(pidFile, StandardCharsets.UTF_8).get(0).trim());
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot read the postmaster pid from " + pidFile, e);
        }
    }

    private static boolean isZombie(long pid) {
        try {
            return Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"), StandardCharsets.UTF_8).stream()
                    .anyMatch(line -> line.startsWith("State:") && line.contains("Z"));
        } catch (IOException gone) {
            return false;
        }
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    Connection connect() throws SQLException {
        return pg.getPostgresDatabase().getConnection();
    }

    void exec(String... sql) {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            for (String q : sql) {
                s.execute(q);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Runs the statements in one transaction and returns its commit time in epoch millis (from pg_xact_commit_timestamp). */
    long commit(String... sql) {
        try (Connection c = connect()) {
            c.setAutoCommit(false);
            String xid;
            try (Statement s = c.createStatement()) {
                for (String q : sql) {
                    s.execute(q);
                }
                try (ResultSet rs = s.executeQuery("SELECT pg_current_xact_id()::text")) {
                    rs.next();
                    xid = rs.getString(1);
                }
            }
            c.commit();
            c.setAutoCommit(true);
            return commitMillis(c, xid);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Loads {@code rows} (CSV lines) into {@code table} with one COPY in one transaction and returns its commit
     * millis. COPY writes its rows with heap multi-inserts: one WAL record, so one LSN, per page of rows.
     */
    long copy(String table, String columns, Iterable<String> rows) {
        try (Connection c = connect()) {
            c.setAutoCommit(false);
            String xid;
            org.postgresql.copy.CopyIn in = c.unwrap(org.postgresql.PGConnection.class).getCopyAPI()
                    .copyIn("COPY " + table + " (" + columns + ") FROM STDIN WITH (FORMAT csv)");
            try {
                StringBuilder chunk = new StringBuilder();
                for (String row : rows) {
                    chunk.append(row).append('\n');
                    if (chunk.length() > 60_000) {
                        byte[] b = chunk.toString().getBytes(StandardCharsets.UTF_8);
                        in.writeToCopy(b, 0, b.length);
                        chunk.setLength(0);
                    }
                }
                byte[] b = chunk.toString().getBytes(StandardCharsets.UTF_8);
                in.writeToCopy(b, 0, b.length);
                in.endCopy();
            } finally {
                if (in.isActive()) {
                    in.cancelCopy();
                }
            }
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_current_xact_id()::text")) {
                rs.next();
                xid = rs.getString(1);
            }
            c.commit();
            c.setAutoCommit(true);
            return commitMillis(c, xid);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    static long commitMillis(Connection c, String xid) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT floor(extract(epoch from pg_xact_commit_timestamp(?::xid)) * 1000)::bigint")) {
            ps.setString(1, xid);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    long queryLong(String sql) {
        try (Connection c = connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    String queryString(String sql) {
        try (Connection c = connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Replica props for this server. */
    Map<String, Object> props(String name, String slot, Path dir, String tables) {
        Map<String, Object> p = new HashMap<>();
        p.put(ReplicaConfig.NAME, name);
        p.put(ReplicaConfig.HOSTNAME, "127.0.0.1");
        p.put(ReplicaConfig.PORT, Integer.toString(port));
        p.put(ReplicaConfig.USER, "postgres");
        p.put(ReplicaConfig.PASSWORD, "unused");
        p.put(ReplicaConfig.DBNAME, "postgres");
        p.put(ReplicaConfig.TABLES, tables);
        p.put(ReplicaConfig.SLOT_NAME, slot);
        p.put(ReplicaConfig.PATH, dir.toString());
        p.put(ReplicaConfig.WATERMARK_INTERVAL_MS, "200");
        return p;
    }

    /**
     * Drops every slot no replica uses any more, waiting (bounded) for slots still being released: each test creates its
     * own, and leaving them would run the server out of max_replication_slots.
     */
    void dropIdleSlots() {
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).pollInterval(java.time.Duration.ofMillis(200))
                .untilAsserted(() -> {
                    exec("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active");
                    org.assertj.core.api.Assertions.assertThat(queryLong("SELECT count(*) FROM pg_replication_slots")).isZero();
                });
    }

    @Override
    public void close() {
        stop();
        try (var files = Files.walk(dataDir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
