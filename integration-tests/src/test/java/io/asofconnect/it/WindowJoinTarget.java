package io.asofconnect.it;

import io.asofconnect.it.JoinOracle.JoinType;
import io.asofconnect.it.JoinOracle.Row;
import io.asofconnect.it.JoinOracle.Window;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.WorkerJmx;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The target side of the window-join tests: one database for the join connectors' tables, their configurations,
 * and what the tests read back (output rows, offsets and held rows, the late ledger, the late-records metric).
 */
final class WindowJoinTarget {

    static final String CONNECTOR_CLASS = "io.asofconnect.windowjoin.WindowJoinSinkConnector";
    static final String HELD_TABLE = "asof_connect_join_held";
    static final String LATE_TABLE = "asof_connect_join_late";
    static final String LATE_METRIC = "join-late-records-total";

    private static final String COLUMNS = "\"__partition\", \"__left_offset\", \"__right_offset\", \"__match\","
            + " \"__left_time\", \"__right_time\", \"left_session\", \"left_url\", \"left_ts\", \"left_query\","
            + " \"right_session\", \"right_url\", \"right_ts\"";

    private final PostgresServer postgres;
    private final KafkaBroker broker;
    private final String database;
    private final Path stateDir;

    /** Creates {@code database}; the join's per-task state files go under {@code stateDir}. */
    WindowJoinTarget(PostgresServer postgres, KafkaBroker broker, String database, Path stateDir) {
        this.postgres = postgres;
        this.broker = broker;
        this.database = database;
        this.stateDir = stateDir;
        postgres.createDatabase(database);
    }

    String database() {
        return database;
    }

    /**
     * A join of {@code stream}'s topics on (session, url), event time from the {@code ts} field, into {@code table}
     * (created by the connector), late records dropped; callers override what their test is about.
     */
    Map<String, String> config(ClickStream stream, String table, JoinType type, Window window, long idleTimeoutMs) {
        // The documented example, so that it cannot drift from the connector; the test's window and type on top.
        Map<String, String> values = postgres.placeholders(stateDir);
        values.put("QUERIES_TOPIC", stream.leftTopic());
        values.put("CLICKS_TOPIC", stream.rightTopic());
        values.put("WINDOW_AFTER_MS", Long.toString(window.after()));
        values.put("LATENESS_MS", Long.toString(window.lateness()));
        values.put("IDLE_TIMEOUT_MS", Long.toString(idleTimeoutMs));
        values.put("STATE_DIR", stateDir.toString());
        values.put("BOOTSTRAP", broker.bootstrapServers());
        values.put("TARGET_DB", database);
        Map<String, String> c = new HashMap<>(ConfigTemplates.connectorConfig("distributed/queries-clicks-window-join.json", values));
        c.put("join.window.before.ms", Long.toString(window.before()));
        c.put("join.type", type.name());
        c.put("join.output.table", table);
        return c;
    }

    /** Every row of {@code table}, in key order; empty while the table does not exist. */
    List<Row> rows(String table) throws SQLException {
        List<Row> rows = new ArrayList<>();
        if (!tableExists(table)) {
            return rows;
        }
        try (Connection c = postgres.connect(database); PreparedStatement ps = c.prepareStatement(
                "SELECT " + COLUMNS + " FROM " + PostgresServer.quoteIdentifier(table)
                        + " ORDER BY \"__partition\", \"__left_offset\", \"__right_offset\"")) {
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Row(rs.getInt(1), rs.getLong(2), rs.getLong(3), rs.getString(4),
                            (Long) rs.getObject(5, Long.class), (Long) rs.getObject(6, Long.class),
                            rs.getString(7), rs.getString(8), (Long) rs.getObject(9, Long.class), rs.getString(10),
                            rs.getString(11), rs.getString(12), (Long) rs.getObject(13, Long.class)));
                }
            }
        }
        return rows;
    }

    /** Committed rows of {@code table}; 0 while it does not exist. */
    long rowCount(String table) throws SQLException {
        if (!tableExists(table)) {
            return 0;
        }
        try (Connection c = postgres.connect(database); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM " + PostgresServer.quoteIdentifier(table))) {
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    boolean tableExists(String table) throws SQLException {
        try (Connection c = postgres.connect(database); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name = ?")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1) > 0;
            }
        }
    }

    /** The columns of {@code table}'s primary key, in key order. */
    List<String> primaryKey(String table) throws SQLException {
        List<String> columns = new ArrayList<>();
        try (Connection c = postgres.connect(database); PreparedStatement ps = c.prepareStatement(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
                        + " AND a.attnum = ANY(i.indkey) WHERE i.indrelid = ?::regclass AND i.indisprimary"
                        + " ORDER BY array_position(i.indkey, a.attnum)")) {
            ps.setString(1, PostgresServer.quoteIdentifier(table));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    columns.add(rs.getString(1));
                }
            }
        }
        return columns;
    }

    /** Partition -> next offset of {@code connector} on {@code topic} in the offsets table. */
    Map<Integer, Long> nextOffsets(String connector, String topic, int partitions) throws SQLException {
        return new SinkOffsets(postgres, broker, database, connector, topic, partitions).inTarget();
    }

    Map<Integer, Long> logEnd(String topic, int partitions) {
        return new SinkOffsets(postgres, broker, database, "", topic, partitions).logEnd();
    }

    /** Partition -> lowest offset the connector still holds on {@code topic} (its held table); absent: no row. */
    Map<Integer, Long> heldFrom(String connector, String topic) throws SQLException {
        Map<Integer, Long> low = new TreeMap<>();
        if (!tableExists(HELD_TABLE)) {
            return low;
        }
        try (Connection c = postgres.connect(database); PreparedStatement ps = c.prepareStatement(
                "SELECT \"kafka_partition\", \"low_offset\" FROM " + PostgresServer.quoteIdentifier(HELD_TABLE)
                        + " WHERE \"connector_name\" = ? AND \"topic\" = ?")) {
            ps.setString(1, connector);
            ps.setString(2, topic);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    low.put(rs.getInt(1), rs.getLong(2));
                }
            }
        }
        return low;
    }

    /** The late ledger of {@code connector}: "topic/partition/offset" of each record it refused. */
    List<String> lateLedger(String connector) throws SQLException {
        List<String> late = new ArrayList<>();
        if (!tableExists(LATE_TABLE)) {
            return late;
        }
        try (Connection c = postgres.connect(database); PreparedStatement ps = c.prepareStatement(
                "SELECT \"topic\", \"kafka_partition\", \"kafka_offset\" FROM " + PostgresServer.quoteIdentifier(LATE_TABLE)
                        + " WHERE \"connector_name\" = ? ORDER BY 1, 2, 3")) {
            ps.setString(1, connector);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    late.add(rs.getString(1) + "/" + rs.getInt(2) + "/" + rs.getLong(3));
                }
            }
        }
        return late;
    }

    /**
     * Waits (bounded) until {@code connector} has committed both topics to their ends and holds nothing any more:
     * every record is finalized, so no row can still come. Rows, offsets and held offsets are committed in one
     * transaction, so the table is then complete, whatever it holds.
     */
    void awaitSettled(String connector, ClickStream stream, int partitions, Duration timeout) {
        awaitConsumed(connector, stream, partitions, true, timeout);
    }

    /**
     * Waits (bounded) until {@code connector} has committed both topics to their ends; with {@code nothingHeld},
     * also until it holds no record any more.
     */
    void awaitConsumed(String connector, ClickStream stream, int partitions, boolean nothingHeld, Duration timeout) {
        Map<Integer, Long> leftEnd = logEnd(stream.leftTopic(), partitions);
        Map<Integer, Long> rightEnd = logEnd(stream.rightTopic(), partitions);
        Map<String, Object> last = new LinkedHashMap<>();
        String what = connector + " to commit both topics to their ends " + Map.of("left", leftEnd, "right", rightEnd)
                + (nothingHeld ? " and finalize every record" : "");
        try {
            Awaitility.await(what).atMost(timeout).pollInterval(Duration.ofMillis(500)).until(() -> {
                Map<Integer, Long> leftNext = nextOffsets(connector, stream.leftTopic(), partitions);
                Map<Integer, Long> rightNext = nextOffsets(connector, stream.rightTopic(), partitions);
                Map<Integer, Long> leftHeld = heldFrom(connector, stream.leftTopic());
                Map<Integer, Long> rightHeld = heldFrom(connector, stream.rightTopic());
                last.put("left next", leftNext);
                last.put("right next", rightNext);
                last.put("left held from", leftHeld);
                last.put("right held from", rightHeld);
                return leftNext.equals(leftEnd) && rightNext.equals(rightEnd)
                        && (!nothingHeld || (noneHeld(leftHeld, leftEnd) && noneHeld(rightHeld, rightEnd)));
            });
        } catch (ConditionTimeoutException e) {
            throw new AssertionError("Timed out after " + timeout + " waiting for " + what + "; last seen " + last, e);
        }
    }

    /** Nothing is held on a partition when its lowest held offset has reached its next offset. */
    private static boolean noneHeld(Map<Integer, Long> heldFrom, Map<Integer, Long> end) {
        return end.entrySet().stream().allMatch(e -> heldFrom.getOrDefault(e.getKey(), e.getValue()) >= e.getValue());
    }

    /** The connector's late-records counter, summed over its tasks, read over JMX from {@code worker}. */
    static double lateMetric(ConnectWorker worker, String connector) {
        try (WorkerJmx jmx = WorkerJmx.attach(worker.process())) {
            Map<String, Double> metrics = jmx.pluginMetrics(connector);
            Double late = metrics.get(LATE_METRIC);
            if (late == null) {
                throw new AssertionError("no " + LATE_METRIC + " metric for " + connector + " among " + metrics.keySet());
            }
            return late;
        }
    }

    /**
     * Asserts that {@code actual} and {@code expected} are the same multiset of rows; on a difference, names the
     * missing, unexpected and duplicated rows (first few of each) rather than dumping both lists.
     */
    static void assertSameRows(String what, List<Row> expected, List<Row> actual) {
        Map<Row, Integer> missing = counts(expected);
        Map<Row, Integer> unexpected = new LinkedHashMap<>();
        for (Row r : actual) {
            Integer left = missing.get(r);
            if (left == null) {
                unexpected.merge(r, 1, Integer::sum);
            } else if (left == 1) {
                missing.remove(r);
            } else {
                missing.put(r, left - 1);
            }
        }
        Map<String, Integer> keys = new TreeMap<>();
        actual.forEach(r -> keys.merge(r.key(), 1, Integer::sum));
        List<String> duplicated = keys.entrySet().stream().filter(e -> e.getValue() > 1)
                .map(e -> e.getKey() + " x" + e.getValue()).toList();
        if (!missing.isEmpty() || !unexpected.isEmpty() || !duplicated.isEmpty()) {
            throw new AssertionError(what + ": " + actual.size() + " rows, expected " + expected.size() + "; "
                    + missing.size() + " missing, e.g. " + sample(missing) + "; "
                    + unexpected.size() + " unexpected, e.g. " + sample(unexpected) + "; "
                    + duplicated.size() + " keys more than once, e.g. " + duplicated.stream().limit(10).toList());
        }
        assertThat(actual).hasSameSizeAs(expected);
    }

    private static Map<Row, Integer> counts(List<Row> rows) {
        Map<Row, Integer> counts = new LinkedHashMap<>();
        rows.forEach(r -> counts.merge(r, 1, Integer::sum));
        return counts;
    }

    private static List<String> sample(Map<Row, Integer> rows) {
        return rows.keySet().stream().sorted(Row.KEY_ORDER).limit(8).map(Row::toString).toList();
    }
}
