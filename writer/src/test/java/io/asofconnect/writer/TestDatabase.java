package io.asofconnect.writer;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/** A throwaway Postgres for the writer's tests. Listens on TCP only: a stale Unix socket lock would block the next start. */
final class TestDatabase implements AutoCloseable {
    private final EmbeddedPostgres pg;
    private final int port;

    private TestDatabase(EmbeddedPostgres pg, int port) {
        this.pg = pg;
        this.port = port;
    }

    static TestDatabase start() throws IOException {
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            port = s.getLocalPort();
        }
        EmbeddedPostgres pg = EmbeddedPostgres.builder()
                .setPort(port)
                .setServerConfig("unix_socket_directories", "")
                .setServerConfig("max_connections", "30")
                .start();
        return new TestDatabase(pg, port);
    }

    String url() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
    }

    Connection connect() throws SQLException {
        return DriverManager.getConnection(url(), "postgres", "postgres");
    }

    void execute(String... sql) throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            for (String q : sql) {
                s.execute(q);
            }
        }
    }

    /** Rows of the first column of a query, as text. */
    List<String> column(String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Connection c = connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    @Override
    public void close() throws IOException {
        pg.close();
    }
}
