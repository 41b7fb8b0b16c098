package io.asofconnect.writer.testing;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * A real Postgres for the target, with durable commits so that a restart test means what it says. Listens
 * on TCP only: a Unix socket lock file left by a dead server would block the next start here.
 */
public final class TargetDatabase implements AutoCloseable {
    private final Path dataDir;
    private final int port;
    private final java.util.Map<String, String> extraConfig;
    private EmbeddedPostgres pg;

    private TargetDatabase(Path dataDir, int port, java.util.Map<String, String> extraConfig) {
        this.dataDir = dataDir;
        this.port = port;
        this.extraConfig = extraConfig;
    }

    public static TargetDatabase start() throws IOException {
        return start(java.util.Map.of());
    }

    /** Also a CDC source: the replica of the enrichment reads from it. */
    public static TargetDatabase startWithLogicalDecoding() throws IOException {
        return start(java.util.Map.of("wal_level", "logical", "max_replication_slots", "4", "max_wal_senders", "4",
                "track_commit_timestamp", "on", "wal_sender_timeout", "5s"));
    }

    private static TargetDatabase start(java.util.Map<String, String> extraConfig) throws IOException {
        TargetDatabase db = new TargetDatabase(Files.createTempDirectory("asof-sink-pg"), freePort(), extraConfig);
        db.startServer();
        return db;
    }

    public int port() {
        return port;
    }

    private void startServer() throws IOException {
        EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder();
        extraConfig.forEach(builder::setServerConfig);
        pg = builder
                .setDataDirectory(dataDir)
                .setCleanDataDirectory(false) // true would delete the data directory on every stop
                .setPort(port)
                .setServerConfig("synchronous_commit", "on")
                .setServerConfig("fsync", "on")
                .setServerConfig("unix_socket_directories", "")
                .setServerConfig("max_connections", "50")
                .setRegisterShutdownHook(true)
                .setDataDirectoryCustomizer(TargetDatabase::requirePasswords)
                .start();
    }

    /** The superuser connects freely (the harness needs it); every other role must give its password. */
    private static void requirePasswords(java.io.File dir) {
        try {
            Files.writeString(dir.toPath().resolve("pg_hba.conf"),
                    "host all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\nlocal all postgres trust\n");
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Stops the server (fast shutdown) and starts it again on the same data directory and port. */
    public void stop() throws IOException {
        pg.close();
        pg = null;
        clearStaleLock();
    }

    public void restart() throws IOException {
        startServer();
    }

    /** A postmaster.pid whose process is gone or a zombie would make Postgres refuse to start. */
    private void clearStaleLock() throws IOException {
        Path pid = dataDir.resolve("postmaster.pid");
        if (!Files.exists(pid)) {
            return;
        }
        String first = Files.readAllLines(pid).get(0).trim();
        Path status = Path.of("/proc", first, "status");
        boolean alive = Files.exists(status) && Files.readAllLines(status).stream().noneMatch(l -> l.startsWith("State:") && l.contains("Z"));
        if (!alive) {
            Files.delete(pid);
        }
    }

    public String url() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
    }

    public Connection connect() throws SQLException {
        return java.sql.DriverManager.getConnection(url(), "postgres", "postgres");
    }

    public void execute(String... sql) throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            for (String q : sql) {
                s.execute(q);
            }
        }
    }

    /** Rows of the first column of a query, as text. */
    public List<String> column(String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Connection c = connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    public long scalar(String sql) throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    public static int freePort() throws IOException {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() throws IOException {
        if (pg != null) {
            pg.close();
            pg = null;
        }
        try (var files = Files.walk(dataDir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }
}
