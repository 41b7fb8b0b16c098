package io.asofconnect.it.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

/**
 * A real Postgres (zonky embedded binaries) listening on TCP 127.0.0.1 only, with logical decoding and commit
 * timestamps on, and durable commits ({@code fsync}, {@code synchronous_commit}) so restart and crash tests
 * are honest. It can be stopped, crashed and started again on the same data directory and port.
 */
public final class PostgresServer implements AutoCloseable {

    public static final String USER = "postgres";
    private static final Duration STARTUP = Duration.ofSeconds(60);

    private final Path dataDir;
    private final Path logFile;
    private final int port;
    private EmbeddedPostgres server;

    private PostgresServer(Path dataDir, Path logFile, int port) {
        this.dataDir = dataDir;
        this.logFile = logFile;
        this.port = port;
    }

    public static PostgresServer start(Path workDir, String name) {
        PostgresServer pg = new PostgresServer(workDir.resolve(name + "-data"), workDir.resolve(name + ".log"),
                FreePorts.pick());
        pg.startServer(true);
        return pg;
    }

    public int port() {
        return port;
    }

    public String host() {
        return "127.0.0.1";
    }

    public String jdbcUrl(String database) {
        return "jdbc:postgresql://127.0.0.1:" + port + "/" + database;
    }

    public Connection connect(String database) throws SQLException {
        return DriverManager.getConnection(jdbcUrl(database), USER, "");
    }

    /**
     * Whether backend {@code pid} still has a session (seen from {@code database}); with {@code inTransaction},
     * a session inside a transaction. For tests that must know a killed or frozen client's transaction ended.
     */
    public boolean hasSession(String database, int pid, boolean inTransaction) throws SQLException {
        try (Connection c = connect(database); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ?" + (inTransaction ? " AND xact_start IS NOT NULL" : ""))) {
            ps.setInt(1, pid);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1) > 0;
            }
        }
    }

    /** A connection as {@code user} with {@code password}, for checks of a role's privileges or authentication. */
    public Connection connect(String database, String user, String password) throws SQLException {
        return DriverManager.getConnection(jdbcUrl(database), user, password);
    }

    /**
     * Creates a login role that is not a superuser, with a password (stored as SCRAM, the server's default).
     * Under the default trust authentication the password is not checked; {@link #requirePassword} turns that on.
     */
    public void createLoginRole(String role, String password) {
        try (Connection c = connect("postgres"); Statement s = c.createStatement()) {
            s.execute("CREATE ROLE " + quoteIdentifier(role) + " LOGIN NOSUPERUSER PASSWORD " + quoteLiteral(password));
        } catch (SQLException e) {
            throw new IllegalStateException("Cannot create role " + role + " on port " + port, e);
        }
    }

    /**
     * Makes TCP connections of {@code role} authenticate with {@code scram-sha-256}, ahead of the trust lines
     * initdb wrote (pg_hba.conf is first match), and reloads the configuration. Other roles keep trust.
     */
    public void requirePassword(String role) {
        Path hba = dataDir.resolve("pg_hba.conf");
        try {
            String current = Files.readString(hba, StandardCharsets.UTF_8);
            String quotedRole = quoteIdentifier(role);
            String lines = "host all " + quotedRole + " 127.0.0.1/32 scram-sha-256\n"
                    + "host all " + quotedRole + " ::1/128 scram-sha-256\n";
            Files.writeString(hba, lines + current, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot rewrite " + hba, e);
        }
        try (Connection c = connect("postgres"); Statement s = c.createStatement()) {
            s.execute("SELECT pg_reload_conf()");
        } catch (SQLException e) {
            throw new IllegalStateException("Cannot reload the configuration of the server on port " + port, e);
        }
    }

    public void createDatabase(String database) {
        try (Connection c = connect("postgres"); Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE " + quoteIdentifier(database));
        } catch (SQLException e) {
            throw new IllegalStateException("Cannot create database " + database + " on port " + port, e);
        }
    }

    /** Clean shutdown (checkpoint), then start again on the same data directory and port. */
    public void restart() {
        stopServer();
        startServer(false);
    }

    /** Clean shutdown (checkpoint), e.g. for an outage; {@link #startAgain()} brings it back on the same port. */
    public void stop() {
        stopServer();
    }

    /**
     * A crash: SIGKILL of the postmaster and every backend, no checkpoint; the next start runs WAL recovery.
     * Call {@link #startAgain()} to bring it back.
     */
    public void crash() {
        long postmaster = postmasterPid();
        ProcessHandle.of(postmaster).ifPresent(p -> {
            List<ProcessHandle> children = p.descendants().toList();
            p.destroyForcibly();
            children.forEach(ProcessHandle::destroyForcibly);
        });
        Waits.until(() -> ProcessHandle.of(postmaster).map(h -> !h.isAlive() || isZombie(postmaster)).orElse(true),
                Duration.ofSeconds(20), "postmaster " + postmaster + " to die");
        clearStaleLock();
        releaseEmbeddedHandle();
    }

    public void startAgain() {
        startServer(false);
    }

    @Override
    public void close() {
        stopServer();
    }

    private void startServer(boolean fresh) {
        if (!fresh) {
            clearStaleLock();
        }
        Map<String, String> config = new TreeMap<>();
        config.put("listen_addresses", "127.0.0.1");
        // No Unix socket: its lock file would outlive a crash just like postmaster.pid.
        config.put("unix_socket_directories", "");
        config.put("wal_level", "logical");
        config.put("max_replication_slots", "10");
        config.put("max_wal_senders", "10");
        config.put("track_commit_timestamp", "on");
        config.put("synchronous_commit", "on");
        config.put("fsync", "on");
        config.put("max_connections", "100");
        config.put("shared_buffers", "32MB");
        config.put("log_min_messages", "warning");
        try {
            EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
                    .setPort(port)
                    .setDataDirectory(dataDir)
                    .setCleanDataDirectory(false)
                    .setPGStartupWait(STARTUP)
                    .setOutputRedirector(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
                    .setErrorRedirector(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
            config.forEach(builder::setServerConfig);
            server = builder.start();
        } catch (IOException e) {
            throw new UncheckedIOException("Postgres did not start on port " + port + " with data in " + dataDir
                    + "; see " + logFile, e);
        }
    }

    private void stopServer() {
        if (server != null) {
            try {
                server.close();
            } catch (IOException e) {
                throw new UncheckedIOException("Postgres on port " + port + " did not stop; see " + logFile, e);
            } finally {
                server = null;
            }
        }
    }

    /** After a crash the embedded wrapper still holds its directory lock; closing it must not touch the data. */
    private void releaseEmbeddedHandle() {
        try {
            stopServer();
        } catch (RuntimeException alreadyDead) {
            // pg_ctl stop fails: the server is already gone, which is the point
        }
    }

    /**
     * Dead processes are not reaped here: a killed postmaster leaves a zombie whose pid is still in
     * postmaster.pid, and Postgres then refuses to start. Remove the lock when its owner is gone or a zombie.
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
                throw new UncheckedIOException("Cannot remove the stale " + pidFile, e);
            }
        }
    }

    private long postmasterPid() {
        Path pidFile = dataDir.resolve("postmaster.pid");
        try {
            String first = Files.readAllLines(pidFile, StandardCharsets.UTF_8).get(0).trim();
            return Long.parseLong(first);
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("Cannot read the postmaster pid from " + pidFile, e);
        }
    }

    private static boolean isZombie(long pid) {
        Path status = Path.of("/proc", Long.toString(pid), "status");
        try {
            return Files.readAllLines(status, StandardCharsets.UTF_8).stream()
                    .anyMatch(line -> line.startsWith("State:") && line.contains("Z"));
        } catch (IOException gone) {
            return false;
        }
    }

    /**
     * The config examples' placeholders for this server: {@code PG_HOST}, {@code PG_PORT}, {@code PG_USER}, and
     * {@code SECRETS_FILE}, a properties file written under {@code secretsDir} that holds the password as
     * {@code postgres.password} (the examples read it through Connect's FileConfigProvider). Callers add their own.
     */
    public Map<String, String> placeholders(Path secretsDir) {
        Path secrets = secretsDir.resolve("secrets.properties");
        try {
            Files.createDirectories(secretsDir);
            Files.writeString(secrets, "postgres.password=postgres\n");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, String> values = new TreeMap<>();
        values.put("PG_HOST", host());
        values.put("PG_PORT", Integer.toString(port()));
        values.put("PG_USER", USER);
        values.put("SECRETS_FILE", secrets.toString());
        return values;
    }

    public static String quoteIdentifier(String identifier) {
        return '"' + identifier.replace("\"", "\"\"") + '"';
    }

    /** For statements that take no bind parameters (CREATE ROLE ... PASSWORD). */
    public static String quoteLiteral(String value) {
        return "'" + value.replace("'", "''") + "'";
    }
}
