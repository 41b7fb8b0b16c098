package io.asofconnect.it.bench;

import io.asofconnect.it.harness.PostgresServer;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.function.IntFunction;

/**
 * The end-to-end ceiling: the benchmark's rows written straight into a table of the same database with
 * {@code COPY ... FROM STDIN} through pgjdbc's {@code CopyManager}, in one transaction, with no broker, worker
 * or converter in the way. Rows per second from the moment it could send its first row (its connection open,
 * before it creates its table) to its commit, which makes every row visible: the span the sinks are timed over
 * in {@code SinkEndToEndBenchmark}, from their tasks' start (after the sink's {@code start}, before its first poll) to their
 * last row visible, table creation included on both sides.
 */
final class CopyLoad {
    private static final int ROWS_PER_WRITE = 10_000;

    private CopyLoad() {
    }

    /** @param fields row i's values in column order (id, user_id, amount, category, note, event_time) */
    static double run(PostgresServer pg, String database, String table, int n, IntFunction<Object[]> fields) throws SQLException {
        String quoted = "public." + PostgresServer.quoteIdentifier(table);
        try (Connection c = pg.connect(database)) {
            // Timed from here, not from the first byte of the COPY: the sinks' span includes creating their table.
            long started = System.nanoTime();
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE " + quoted + " (id bigint PRIMARY KEY, user_id bigint, amount integer,"
                        + " category text, note text, event_time bigint)");
            }
            c.setAutoCommit(false);
            CopyIn copy = c.unwrap(PGConnection.class).getCopyAPI().copyIn("COPY " + quoted + " FROM STDIN");
            StringBuilder text = new StringBuilder();
            for (int i = 0; i < n; i++) {
                Object[] row = fields.apply(i);
                for (int f = 0; f < row.length; f++) {
                    // The values hold no tab, newline or backslash, so text format needs no escaping.
                    text.append(row[f]).append(f + 1 < row.length ? '\t' : '\n');
                }
                if ((i + 1) % ROWS_PER_WRITE == 0 || i + 1 == n) {
                    byte[] bytes = text.toString().getBytes(StandardCharsets.UTF_8);
                    copy.writeToCopy(bytes, 0, bytes.length);
                    text.setLength(0);
                }
            }
            long copied = copy.endCopy();
            c.commit();
            double secs = (System.nanoTime() - started) / 1e9;
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM " + quoted)) {
                rs.next();
                if (copied != n || rs.getLong(1) != n) {
                    throw new IllegalStateException("COPY wrote " + copied + " rows (" + rs.getLong(1) + " counted) of " + n);
                }
            }
            System.out.printf("  %s: %,d rows by COPY in %.2f s from its start (connected; table, COPY, commit)%n", table, n, secs);
            return n / secs;
        }
    }
}
