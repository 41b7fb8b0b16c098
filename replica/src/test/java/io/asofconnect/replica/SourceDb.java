package io.asofconnect.replica;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;

/** A real Postgres for one test class, configured for logical decoding and commit timestamps. */
final class SourceDb implements AutoCloseable {
    final EmbeddedPostgres pg;

    private SourceDb(EmbeddedPostgres pg) {
        this.pg = pg;
    }

    static SourceDb start(String walLevel) {
        try {
            return new SourceDb(EmbeddedPostgres.builder()
                    .setPort(freePort())
                    .setServerConfig("wal_level", walLevel)
                    .setServerConfig("max_replication_slots", "10")
                    .setServerConfig("max_wal_senders", "10")
                    .setServerConfig("track_commit_timestamp", "on")
                    .setServerConfig("listen_addresses", "127.0.0.1")
                    .setServerConfig("wal_sender_timeout", "5s")
                    .start());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
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
        p.put(ReplicaConfig.PORT, Integer.toString(pg.getPort()));
        p.put(ReplicaConfig.USER, "postgres");
        p.put(ReplicaConfig.PASSWORD, "unused");
        p.put(ReplicaConfig.DBNAME, "postgres");
        p.put(ReplicaConfig.TABLES, tables);
        p.put(ReplicaConfig.SLOT_NAME, slot);
        p.put(ReplicaConfig.PATH, dir.toString());
        p.put(ReplicaConfig.WATERMARK_INTERVAL_MS, "200");
        return p;
    }

    @Override
    public void close() {
        try {
            pg.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
