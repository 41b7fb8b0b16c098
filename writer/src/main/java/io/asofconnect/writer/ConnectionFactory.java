package io.asofconnect.writer;

import org.apache.kafka.common.config.types.Password;
import org.postgresql.Driver;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Properties;

/**
 * Opens connections to the target. Uses the driver class directly instead of {@code DriverManager}, which
 * does not see drivers loaded by a plugin's class loader.
 */
public final class ConnectionFactory {
    private static final int CONNECT_TIMEOUT_SECONDS = 10;
    /** Longer than any wait inside our transactions (the errant record reporter's, at most a minute). */
    public static final long IDLE_IN_TRANSACTION_TIMEOUT_MS = 90_000L;

    private final String url;
    private final String user;
    private final Password password;
    private final String applicationName;

    ConnectionFactory(String url, String user, Password password, String applicationName) {
        this.url = url;
        this.user = user;
        this.password = password;
        this.applicationName = applicationName;
    }

    Connection open() throws SQLException {
        Properties props = new Properties();
        if (user != null) {
            props.setProperty("user", user);
        }
        if (password != null && password.value() != null) {
            props.setProperty("password", password.value());
        }
        // Keeps parameter values and server "Detail:" lines (which quote key values) out of exception messages.
        props.setProperty("logServerErrorDetail", "false");
        props.setProperty("ApplicationName", applicationName);
        props.setProperty("connectTimeout", Integer.toString(CONNECT_TIMEOUT_SECONDS));
        props.setProperty("tcpKeepAlive", "true");
        // Sends each JDBC batch of inserts as multi-row statements: about twice the rows per second. The URL may override it.
        props.setProperty("reWriteBatchedInserts", "true");
        Connection c = new Driver().connect(url, props);
        if (c == null) {
            throw new SQLException("the Postgres driver does not accept the URL in " + WriterSettings.CONNECTION_URL, "08001");
        }
        try (java.sql.Statement s = c.createStatement()) {
            // A task frozen mid-transaction (SIGSTOP, a long GC) keeps the rows it wrote locked, and the partition's new
            // owner may wait on them; the server ends such a transaction after this long, so that wait is bounded.
            s.execute("SET idle_in_transaction_session_timeout = " + IDLE_IN_TRANSACTION_TIMEOUT_MS);
        } catch (SQLException e) {
            c.close();
            throw e;
        }
        c.setAutoCommit(false);
        return c;
    }

    /** Never the URL's query or the password. */
    @Override
    public String toString() {
        int q = url.indexOf('?');
        return "ConnectionFactory{" + (q < 0 ? url : url.substring(0, q)) + ", user=" + user + "}";
    }
}
