package io.asofconnect.replica.capture;

import io.asofconnect.replica.config.ReplicaConfig;
import org.apache.kafka.connect.errors.ConnectException;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Properties;

/**
 * Opens plain JDBC connections to the source for the start-up checks, the watermark prober and slot
 * management, each bounded by {@code replica.database.connect.timeout.ms}.
 */
public final class PgConnector {
    /** pgjdbc's TLS file options, which Debezium takes as {@code database.<name>}. */
    static final java.util.List<String> TLS_FILE_PROPERTIES = java.util.List.of("sslrootcert", "sslcert", "sslkey", "sslpassword");
    private final ReplicaConfig config;

    public PgConnector(ReplicaConfig config) {
        this.config = config;
    }

    public Connection open(String purpose) throws SQLException {
        Properties p = properties(purpose);
        // The driver is in our plugin class loader, which DriverManager does not search on its own.
        Connection c = new org.postgresql.Driver().connect(config.jdbcUrl(), p);
        if (c == null) {
            throw new SQLException("the Postgres driver did not accept the URL", "08001");
        }
        return c;
    }

    /** The driver properties of a connection for {@code purpose}. */
    Properties properties(String purpose) {
        Properties p = new Properties();
        p.setProperty("user", config.user());
        if (config.password() != null) {
            p.setProperty("password", config.password().value());
        }
        int seconds = (int) Math.max(1, (config.connectTimeoutMs() + 999) / 1000);
        p.setProperty("connectTimeout", Integer.toString(seconds));
        p.setProperty("loginTimeout", Integer.toString(seconds));
        p.setProperty("socketTimeout", Integer.toString(Math.max(seconds * 3, 30)));
        p.setProperty("sslmode", config.sslMode());
        // The TLS files given to Debezium serve the replica's own connections too, or verify-full with a private CA
        // would verify the capture engine's connection and fail the start-up checks and the prober.
        for (String tls : TLS_FILE_PROPERTIES) {
            String value = config.debeziumOverrides().get("database." + tls);
            if (value != null) {
                p.setProperty(tls, value);
            }
        }
        p.setProperty("ApplicationName", "asof-connect " + purpose + " (" + config.name() + ")");
        return p;
    }

    /** Opens a connection or fails with a message that names the server and what to check. */
    public Connection openOrExplain(String purpose) {
        try {
            return open(purpose);
        } catch (SQLException e) {
            throw new ConnectException(explain(e), e);
        }
    }

    String explain(SQLException e) {
        String where = "replica '" + config.name() + "': cannot connect to Postgres at " + config.hostname() + ":"
                + config.port() + ", database '" + config.dbname() + "' as user '" + config.user() + "'";
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        if (state.equals("28P01") || state.equals("28000")) {
            return where + ": authentication failed; check " + ReplicaConfig.USER + " and " + ReplicaConfig.PASSWORD
                    + " and the server's pg_hba.conf";
        }
        if (state.equals("3D000")) {
            return where + ": the database does not exist; check " + ReplicaConfig.DBNAME;
        }
        if (state.startsWith("08")) {
            return where + ": the server is unreachable (" + e.getMessage() + "); check " + ReplicaConfig.HOSTNAME + ", "
                    + ReplicaConfig.PORT + " and that Postgres is running and accepts TCP connections";
        }
        return where + ": " + e.getMessage();
    }

    /** Quotes an SQL identifier for the rare statement that cannot take it as a bind parameter. */
    public static String quoteIdent(String ident) {
        return "\"" + ident.replace("\"", "\"\"") + "\"";
    }

}
