package io.asofconnect.it.bench;

import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.FreePorts;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.ManagedProcess;
import io.asofconnect.it.harness.PluginInstaller;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.TestPaths;
import io.asofconnect.it.harness.Waits;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * End to end on one machine: N JSON records with schemas on a two-partition topic, consumed by two tasks and
 * written into one Postgres, first by our {@code ExactlyOnceJdbcSinkConnector} (exactly-once, upsert by
 * default), then by Debezium's JDBC sink 3.6.0.Final (at-least-once, upsert), both loaded from their own
 * {@code plugin.path} sub-directory of one distributed worker, into separate tables of the same database.
 * The records are all produced first, so each sink drains the same backlog at its own speed.
 *
 * <p>Rows per second are measured from the first row landed to the last: {@code count(*)} is polled (bounded)
 * and the rate is the rows landed between the first non-empty count and the full count, over that span.
 *
 * <p>Arguments: {@code [N] [runs]} with N default 100000 and runs a comma-separated choice of {@code upsert}
 * (default), {@code insert} and {@code hosted} (upsert with the as-of enrichment hosted in the sink, joining a
 * 1,000-row {@code users} table replicated from a second database of the same Postgres); {@code both} means
 * {@code upsert,insert}. The peer always runs last. The peer's plugin directory comes from {@code asof.bench.peer.plugin}
 * (default {@code benchmarks/peer-debezium-jdbc/target/plugin/debezium-connector-jdbc}, from the project root
 * or the module directory), built by {@code mvn -B -f benchmarks/peer-debezium-jdbc/pom.xml package}.
 */
public final class SinkEndToEndBenchmark {

    private static final String TOPIC = "bench-events";
    private static final String DATABASE = "bench";
    private static final String SOURCE_DATABASE = "bench_source";
    private static final int USERS = 1000;
    private static final String PEER_PLUGIN = "asof.bench.peer.plugin";
    private static final String PEER_DEFAULT = "benchmarks/peer-debezium-jdbc/target/plugin/debezium-connector-jdbc";
    private static final Duration POLL = Duration.ofMillis(100);

    private SinkEndToEndBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0].replace("_", "")) : 100_000;
        List<String> ours = List.of((args.length > 1 ? args[1] : "upsert").toLowerCase(java.util.Locale.ROOT)
                .replace("both", "upsert,insert").split(","));
        if (!List.of("upsert", "insert", "hosted").containsAll(ours)) {
            throw new IllegalArgumentException("second argument: a comma-separated choice of upsert, insert, hosted (or both"
                    + " for upsert,insert), not " + args[1]);
        }
        Duration timeout = Duration.ofSeconds(Math.max(180, n / 200));
        Path work = TestPaths.workDir("bench-e2e");
        System.out.printf("End-to-end sink benchmark: %,d records, 2 partitions, 2 tasks; work directory %s%n", n, work);
        PostgresServer postgres = null;
        KafkaBroker broker = null;
        ConnectWorker worker = null;
        try {
            Path plugins = work.resolve("plugins");
            PluginInstaller.install(TestPaths.pluginZip(), plugins);
            copyPeerPlugin(plugins.resolve("debezium-connector-jdbc"));
            postgres = PostgresServer.start(work, "pg");
            postgres.createDatabase(DATABASE);
            broker = KafkaBroker.start(work);
            broker.createTopic(TOPIC, 2);
            produce(broker, n);
            Map<String, String> props = ConnectWorker.distributedProperties(broker, "bench", plugins, FreePorts.pick());
            worker = ConnectWorker.distributed("worker-1", work, props);

            Map<String, Double> rates = new LinkedHashMap<>();
            if (ours.contains("upsert")) {
                rates.put("asof-connect ExactlyOnceJdbcSink, exactly-once, upsert",
                        run(worker, postgres, "asof-upsert", ours(postgres, "asof_upsert", "UPSERT"), "asof_upsert", n, timeout));
            }
            if (ours.contains("insert")) {
                rates.put("asof-connect ExactlyOnceJdbcSink, exactly-once, insert",
                        run(worker, postgres, "asof-insert", ours(postgres, "asof_insert", "INSERT"), "asof_insert", n, timeout));
            }
            if (ours.contains("hosted")) {
                createUsers(postgres);
                rates.put("asof-connect, upsert + as-of enrichment hosted in the sink",
                        run(worker, postgres, "asof-hosted", hosted(postgres, "asof_hosted", work), "asof_hosted", n, timeout));
                requireEnriched(postgres, "asof_hosted");
            }
            String peerName = "Debezium JDBC sink 3.6.0.Final, at-least-once, upsert";
            rates.put(peerName, run(worker, postgres, "dbz-upsert", peer(postgres, "dbz_upsert"), "dbz_upsert", n, timeout));

            double peer = rates.get(peerName);
            System.out.println();
            System.out.printf("End to end, %,d JSON records with schemas, 2 partitions, 2 tasks, broker + worker + Postgres"
                    + " on this machine:%n", n);
            rates.forEach((name, rate) -> System.out.printf("  %-58s %,10.0f rows/s   ratio to Debezium %.2f%n",
                    name, rate, rate / peer));
        } catch (Exception | Error e) {
            ManagedProcess.printTails(System.out, 40);
            throw e;
        } finally {
            if (worker != null) {
                worker.close();
            }
            if (broker != null) {
                broker.close();
            }
            if (postgres != null) {
                postgres.close();
            }
        }
    }

    /** @return rows per second between the first row landed and the last */
    private static double run(ConnectWorker worker, PostgresServer postgres, String connector, Map<String, String> config,
                              String table, int n, Duration timeout) throws SQLException {
        worker.rest().putConnectorConfig(connector, config);
        worker.rest().awaitRunning(connector, 2, Duration.ofSeconds(120));
        long deadline = System.nanoTime() + timeout.toNanos();
        long firstAt = 0;
        long firstCount = 0;
        try (Connection c = postgres.connect(DATABASE)) {
            while (true) {
                long count = count(c, table);
                long now = System.nanoTime();
                if (count > 0 && firstAt == 0) {
                    firstAt = now;
                    firstCount = count;
                }
                if (count >= n) {
                    if (count > n) {
                        throw new IllegalStateException(table + " holds " + count + " rows, more than the " + n + " keys produced");
                    }
                    double secs = (now - firstAt) / 1e9;
                    double rate = secs > 0 ? (n - firstCount) / secs : Double.NaN;
                    System.out.printf("  %s: %,d rows in %.1f s after the first (%,d at the first count)%n", connector, n, secs,
                            firstCount);
                    worker.rest().deleteConnector(connector);
                    return rate;
                }
                if (now > deadline) {
                    throw new IllegalStateException(connector + " wrote " + count + " of " + n + " rows within " + timeout
                            + "; status " + worker.rest().status(connector).orElse(null));
                }
                Waits.pause(POLL);
            }
        }
    }

    private static long count(Connection c, String table) throws SQLException {
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT to_regclass(" + quoteLiteral("public." + table) + ") IS NOT NULL")) {
            rs.next();
            if (!rs.getBoolean(1)) {
                return 0;
            }
        }
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM public." + PostgresServer.quoteIdentifier(table))) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static String quoteLiteral(String text) {
        return "'" + text.replace("'", "''") + "'";
    }

    private static Map<String, String> ours(PostgresServer pg, String table, String insertMode) {
        Map<String, String> c = new LinkedHashMap<>();
        c.put("connector.class", "io.asofconnect.sink.ExactlyOnceJdbcSinkConnector");
        c.put("tasks.max", "2");
        c.put("topics", TOPIC);
        c.put("connection.url", pg.jdbcUrl(DATABASE));
        c.put("connection.user", PostgresServer.USER);
        c.put("table.name.format", table);
        c.put("schema.evolution", "BASIC");
        c.put("insert.mode", insertMode);
        c.put("primary.key.mode", "RECORD_KEY");
        c.put("primary.key.fields", "id");
        return c;
    }

    /** Ours, upsert, joining each event's user_id with the users row valid at its record timestamp. */
    private static Map<String, String> hosted(PostgresServer pg, String table, Path work) {
        Map<String, String> c = ours(pg, table, "UPSERT");
        c.put("enrich.table", "public.users");
        c.put("enrich.key.fields", "user_id");
        c.put("enrich.time.source", "RECORD_TIMESTAMP");
        c.put("enrich.output.mode", "FLATTEN");
        c.put("enrich.columns", "plan");
        c.put("enrich.version.metadata", "false");
        c.put("replica.name", "bench_users");
        c.put("replica.database.hostname", pg.host());
        c.put("replica.database.port", Integer.toString(pg.port()));
        c.put("replica.database.user", PostgresServer.USER);
        c.put("replica.database.dbname", SOURCE_DATABASE);
        c.put("replica.tables", "public.users");
        c.put("replica.slot.name", "bench_users");
        c.put("replica.path", work.resolve("replica").toString());
        return c;
    }

    /** A hosted run only counts if every row carries its user's plan (FLATTEN: column users_plan). */
    private static void requireEnriched(PostgresServer pg, String table) throws SQLException {
        try (Connection c = pg.connect(DATABASE); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM public." + PostgresServer.quoteIdentifier(table)
                     + " WHERE users_plan IS NULL")) {
            rs.next();
            if (rs.getLong(1) != 0) {
                throw new IllegalStateException(rs.getLong(1) + " rows of " + table + " were written without their plan");
            }
        }
    }

    private static void createUsers(PostgresServer pg) throws SQLException {
        pg.createDatabase(SOURCE_DATABASE);
        try (Connection c = pg.connect(SOURCE_DATABASE); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE public.users (id bigint PRIMARY KEY, plan text NOT NULL)");
            s.execute("INSERT INTO public.users SELECT g, 'plan-' || (g % 3) FROM generate_series(0, " + (USERS - 1) + ") g");
        }
    }

    private static Map<String, String> peer(PostgresServer pg, String table) {
        Map<String, String> c = new LinkedHashMap<>();
        c.put("connector.class", "io.debezium.connector.jdbc.JdbcSinkConnector");
        c.put("tasks.max", "2");
        c.put("topics", TOPIC);
        c.put("connection.url", pg.jdbcUrl(DATABASE));
        c.put("connection.username", PostgresServer.USER);
        c.put("connection.password", "unused");
        c.put("table.name.format", table);
        c.put("schema.evolution", "basic");
        c.put("insert.mode", "upsert");
        c.put("primary.key.mode", "record_key");
        c.put("primary.key.fields", "id");
        return c;
    }

    /** N events with distinct keys {id}, alternating partitions, JsonConverter envelopes with schemas. */
    private static void produce(KafkaBroker broker, int n) {
        Map<String, String> fields = new LinkedHashMap<>();
        fields.put("id", "int64");
        fields.put("user_id", "int64");
        fields.put("amount", "int32");
        fields.put("category", "string");
        fields.put("note", "string");
        fields.put("event_time", "int64");
        ObjectNode schema = JsonEvents.structSchema("bench.Event", fields);
        // A struct key: Debezium's sink takes primary.key.mode=record_key only from a struct.
        ObjectNode keySchema = JsonEvents.structSchema("bench.Key", Map.of("id", "int64"));
        // Event times in the past, so that a hosted as-of join never waits for the replica's watermark.
        long base = System.currentTimeMillis() - n - 120_000;
        long started = System.nanoTime();
        try (JsonEvents producer = new JsonEvents(broker)) {
            for (int i = 0; i < n; i++) {
                ObjectNode p = JsonEvents.payload();
                p.put("id", (long) i);
                p.put("user_id", (long) (i % USERS));
                p.put("amount", i % 5000);
                p.put("category", "cat-" + (i % 97));
                p.put("note", "event number " + i + " of the end-to-end benchmark");
                p.put("event_time", base + i);
                ObjectNode key = JsonEvents.payload();
                key.put("id", (long) i);
                producer.sendAsync(TOPIC, i % 2, base + i, JsonEvents.envelope(keySchema, key), JsonEvents.envelope(schema, p));
            }
            producer.flush();
        }
        System.out.printf("  produced %,d records in %.1f s%n", n, (System.nanoTime() - started) / 1e9);
    }

    private static void copyPeerPlugin(Path target) throws IOException {
        Path source = peerPluginDir();
        Files.createDirectories(target);
        try (Stream<Path> jars = Files.list(source)) {
            for (Path jar : jars.filter(p -> p.getFileName().toString().endsWith(".jar")).toList()) {
                Files.copy(jar, target.resolve(jar.getFileName()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }

    private static Path peerPluginDir() {
        String configured = System.getProperty(PEER_PLUGIN);
        List<Path> candidates = configured != null ? List.of(Path.of(configured))
                : List.of(Path.of(PEER_DEFAULT), Path.of("..").resolve(PEER_DEFAULT));
        for (Path p : candidates) {
            if (Files.isDirectory(p)) {
                try (Stream<Path> files = Files.list(p)) {
                    if (files.anyMatch(f -> f.getFileName().toString().startsWith("debezium-connector-jdbc-"))) {
                        return p.toAbsolutePath().normalize();
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot list " + p, e);
                }
            }
        }
        throw new IllegalStateException("the Debezium JDBC sink plugin directory was not found at " + candidates
                + "; build it with mvn -B -f benchmarks/peer-debezium-jdbc/pom.xml package, or set -D" + PEER_PLUGIN);
    }
}
