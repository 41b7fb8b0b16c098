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
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * End to end on one machine: N JSON records with schemas on a two-partition topic, consumed by two tasks and
 * written into one Postgres, first by our {@code ExactlyOnceJdbcSinkConnector} (exactly-once, upsert by
 * default), then by Debezium's JDBC sink 3.6.0.Final (at-least-once, upsert), both loaded from their own
 * {@code plugin.path} sub-directory of one distributed worker, into separate tables of the same database.
 * The records are all produced first, so each sink drains the same backlog at its own speed.
 *
 * <p>Each sink is timed two ways in one run (see {@link #run}), both ending when the last record of each
 * partition has landed (polled every 20 ms, bounded): <em>steady</em>, rows per second from the first row
 * landed to the last, the first batch's rows and time left out (what the sink-against-sink rows compare); and
 * <em>from its start</em>, all N rows over the span from the moment its tasks are RUNNING (the worker has
 * started them: from then on the records could be consumed) to the last row visible. {@link CopyLoad} is timed
 * the same way, from the moment it could send its first row (connected, before it creates its table) to its
 * commit, so that {@code e2e-vs-copy} compares like spans (see {@link #run}).
 *
 * <p>The peer runs twice per round: at {@code batch.size} {@value #PEER_DEFAULT_BATCH_SIZE} (its default) and at
 * {@value #BATCH_SIZE} (ours, set explicitly on both), so that ours is compared like for like and with the
 * peer as users get it; see {@link #peer}.
 *
 * <p>Arguments: {@code [N] [runs] [rounds]} with N default 100000, rounds default {@value #DEFAULT_ROUNDS}, and
 * runs a comma-separated choice of {@code upsert} (default), {@code insert}, {@code hosted} (upsert with the as-of
 * enrichment hosted in the sink, joining a 1,000-row {@code users} table replicated from a second database of the
 * same Postgres) and {@code copy} (the same rows loaded by {@link CopyLoad}, the ceiling); {@code both} means
 * {@code upsert,insert}. Order bias: every side first drains a warm-up topic (a third of N, 10,000 to 100,000
 * records: the worker's JIT compiles with both tiers, as in production) into a table of its own, discarded; then each measured round drains the measured topic again, under
 * new connector and table names, the peers last in odd rounds and first in even ones. Each side's figure is its
 * median over the rounds, printed with the spread (slowest and fastest round): on this 2-core machine single runs
 * put {@code e2e-hosted-vs-plain} at 1.21 one day and 0.77 the next, on the same code. Prints the
 * {@code bench e2e-vs-debezium} (upsert / the peer at its default batch size) and
 * {@code bench e2e-vs-debezium-batch3000} (upsert / the peer at ours) lines, and {@code e2e-hosted-vs-plain}
 * (hosted / upsert) and {@code e2e-vs-copy} (upsert / copy, both from their start) when those ran. The
 * peer's plugin directory comes from {@code asof.bench.peer.plugin}
 * (default {@code benchmarks/peer-debezium-jdbc/target/plugin/debezium-connector-jdbc}, from the project root
 * or the module directory), built by {@code mvn -B -f benchmarks/peer-debezium-jdbc/pom.xml package}.
 */
public final class SinkEndToEndBenchmark {

    private static final String TOPIC = "bench-events";
    private static final String WARMUP_TOPIC = "bench-warmup";
    private static final int MIN_WARMUP = 10_000;
    private static final int MAX_WARMUP = 100_000;
    private static final String UPSERT = "asof-connect ExactlyOnceJdbcSink, exactly-once, upsert";
    private static final String INSERT = "asof-connect ExactlyOnceJdbcSink, exactly-once, insert";
    private static final String HOSTED = "asof-connect, upsert + as-of enrichment hosted in the sink";
    private static final String COPY = "COPY from Java (pgjdbc CopyManager), same rows";
    /** Our sink's default {@code batch.size}, set explicitly on ours and on the peer's like-for-like side. */
    static final int BATCH_SIZE = 3000;
    /** Debezium's JDBC sink's default {@code batch.size}. */
    static final int PEER_DEFAULT_BATCH_SIZE = 500;
    private static final String PEER = "Debezium JDBC sink 3.6.0.Final, at-least-once, upsert, batch.size " + PEER_DEFAULT_BATCH_SIZE
            + " (its default)";
    private static final String PEER_OUR_BATCH = "Debezium JDBC sink 3.6.0.Final, at-least-once, upsert, batch.size " + BATCH_SIZE
            + " (ours)";
    private static final String DATABASE = "bench";
    private static final String SOURCE_DATABASE = "bench_source";
    private static final int USERS = 1000;
    private static final String PEER_PLUGIN = "asof.bench.peer.plugin";
    private static final String PEER_DEFAULT = "benchmarks/peer-debezium-jdbc/target/plugin/debezium-connector-jdbc";
    private static final Duration POLL = Duration.ofMillis(20);
    static final int DEFAULT_ROUNDS = 3;

    private SinkEndToEndBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0].replace("_", "")) : 100_000;
        List<String> ours = List.of((args.length > 1 ? args[1] : "upsert").toLowerCase(java.util.Locale.ROOT)
                .replace("both", "upsert,insert").split(","));
        if (!List.of("upsert", "insert", "hosted", "copy").containsAll(ours)) {
            throw new IllegalArgumentException("second argument: a comma-separated choice of upsert, insert, hosted, copy (or"
                    + " both for upsert,insert), not " + args[1]);
        }
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : DEFAULT_ROUNDS;
        if (rounds < 1) {
            throw new IllegalArgumentException("third argument: the measured rounds, at least 1, not " + args[2]);
        }
        int warmup = Math.max(MIN_WARMUP, Math.min(MAX_WARMUP, n / 3));
        Duration timeout = Duration.ofSeconds(Math.max(180, n / 200));
        Path work = TestPaths.workDir("bench-e2e");
        // The broker and the worker run as Kafka's scripts start them, unless -Dasof.it.production.jvms=false.
        if (System.getProperty(ManagedProcess.PRODUCTION_JVMS) == null) {
            System.setProperty(ManagedProcess.PRODUCTION_JVMS, "true");
        }
        System.out.printf("End-to-end sink benchmark: %,d records, 2 partitions, 2 tasks; work directory %s; broker and worker"
                + " JVMs: %s%n", n, work, ManagedProcess.productionJvms() ? "as Kafka's scripts start them (G1, C2)" : "the tests' (serial GC, C1)");
        PostgresServer postgres = null;
        PostgresServer source = null;
        KafkaBroker broker = null;
        ConnectWorker worker = null;
        try {
            Path plugins = work.resolve("plugins");
            PluginInstaller.install(TestPaths.pluginZip(), plugins);
            copyPeerPlugin(plugins.resolve("debezium-connector-jdbc"));
            postgres = PostgresServer.start(work, "pg");
            postgres.createDatabase(DATABASE);
            broker = KafkaBroker.start(work);
            broker.createTopic(WARMUP_TOPIC, 2);
            broker.createTopic(TOPIC, 2);
            long base = System.currentTimeMillis() - n - 120_000;
            produce(broker, WARMUP_TOPIC, warmup, base);
            produce(broker, TOPIC, n, base);
            Map<String, String> props = ConnectWorker.distributedProperties(broker, "bench", plugins, FreePorts.pick());
            worker = ConnectWorker.distributed("worker-1", work, props);
            if (ours.contains("hosted")) {
                // The dimension table on a server of its own by default, as a source database usually is: on the
                // target's server the replica's walsender must also decode every row the sinks write (its slot reads
                // the server's whole WAL), which costs every side, not the enrichment.
                boolean shared = "shared".equals(System.getProperty("asof.bench.source", "separate"));
                source = shared ? postgres : PostgresServer.start(work, "pg-source");
                System.out.printf("  the replicated users table is on %s%n", shared ? "the target's Postgres server (-Dasof.bench.source=shared)"
                        : "a Postgres server of its own (-Dasof.bench.source=shared puts it on the target's)");
                createUsers(source);
            }

            // Order bias: every side first drains a warm-up topic of its own size into its own table, discarded,
            // so that none of them pays the worker's (or its plugin's) JIT warm-up inside the measured span. Then
            // each measured round drains the same topic again under new connector and table names, in the sides'
            // order in odd rounds and the reverse in even ones; a side's figure is its median over the rounds.
            System.out.printf("warm-up, %,d records per side (discarded):%n", warmup);
            runSides(sides(ours, worker, postgres, source, work, WARMUP_TOPIC, "_warm", warmup, timeout, base), false);
            Map<String, List<Rates>> byRound = new LinkedHashMap<>();
            for (int r = 1; r <= rounds; r++) {
                System.out.printf("measured round %d of %d, %,d records per side%s:%n", r, rounds, n, r % 2 == 0 ? ", reverse order" : "");
                runSides(sides(ours, worker, postgres, source, work, TOPIC, "_r" + r, n, timeout, base), r % 2 == 0)
                        .forEach((name, rate) -> byRound.computeIfAbsent(name, k -> new ArrayList<>()).add(rate));
            }
            Map<String, Double> steady = new LinkedHashMap<>();
            Map<String, Double> fromStart = new LinkedHashMap<>();
            byRound.forEach((name, list) -> {
                steady.put(name, median(list.stream().map(Rates::steady).toList()));
                fromStart.put(name, median(list.stream().map(Rates::fromStart).toList()));
            });

            System.out.println();
            System.out.printf("End to end, %,d JSON records with schemas, 2 partitions, 2 tasks, broker + worker + Postgres"
                    + " on this machine, every side warmed, median of %d round%s (slowest-fastest); steady = from the first"
                    + " row landed, from start = all rows from the side's start (tasks RUNNING; COPY: connected, before its CREATE TABLE):%n",
                    n, rounds, rounds == 1 ? "" : "s");
            byRound.forEach((name, list) -> System.out.printf("  %-86s steady %s   from start %s%n", name,
                    spread(steady.get(name), list.stream().map(Rates::steady).toList()),
                    spread(fromStart.get(name), list.stream().map(Rates::fromStart).toList())));
            if (steady.containsKey(UPSERT)) {
                System.out.printf("  ours (upsert) / Debezium, steady: %.2f at its default batch.size %d, %.2f at our %d%n",
                        steady.get(UPSERT) / steady.get(PEER), PEER_DEFAULT_BATCH_SIZE, steady.get(UPSERT) / steady.get(PEER_OUR_BATCH),
                        BATCH_SIZE);
                if (steady.containsKey(HOSTED)) {
                    benchLine("e2e-hosted-vs-plain", steady.get(HOSTED), steady.get(UPSERT));
                }
                benchLine("e2e-vs-debezium", steady.get(UPSERT), steady.get(PEER));
                benchLine("e2e-vs-debezium-batch3000", steady.get(UPSERT), steady.get(PEER_OUR_BATCH));
                if (fromStart.containsKey(COPY)) {
                    // Both from their start (see run): COPY's rows become visible only at its commit, so it has no
                    // first row landed, and a sink timed from its first row landed would leave out its first batch
                    // while COPY pays for all of its rows.
                    benchLine("e2e-vs-copy", fromStart.get(UPSERT), fromStart.get(COPY));
                }
            }
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
            if (source != null && source != postgres) {
                source.close();
            }
            if (postgres != null) {
                postgres.close();
            }
        }
    }

    /** One side of a round: its label and what drains the topic into its table, giving its rates. */
    private record Side(String name, Drain drain) {
    }

    private interface Drain {
        Rates run() throws Exception;
    }

    /**
     * A side's rows per second in one round: {@code steady} from its first row landed to its last (NaN for COPY,
     * whose rows all appear at its commit), {@code fromStart} all rows from its start to its last row visible.
     */
    private record Rates(double steady, double fromStart) {
    }

    /** The sides asked for, then the peer at both batch sizes, each with connector and table names ending in {@code suffix}. */
    private static List<Side> sides(List<String> ours, ConnectWorker worker, PostgresServer postgres, PostgresServer source, Path work,
                                    String topic,
                                    String suffix, int count, Duration timeout, long base) {
        List<Side> sides = new ArrayList<>();
        if (ours.contains("upsert")) {
            sides.add(new Side(UPSERT, () -> run(worker, postgres, "asof-upsert" + suffix,
                    ours(postgres, topic, "asof_upsert" + suffix, "UPSERT"), "asof_upsert" + suffix, count, timeout)));
        }
        if (ours.contains("insert")) {
            sides.add(new Side(INSERT, () -> run(worker, postgres, "asof-insert" + suffix,
                    ours(postgres, topic, "asof_insert" + suffix, "INSERT"), "asof_insert" + suffix, count, timeout)));
        }
        if (ours.contains("hosted")) {
            sides.add(new Side(HOSTED, () -> {
                Rates rates = run(worker, postgres, "asof-hosted" + suffix,
                        hosted(postgres, source, topic, "asof_hosted" + suffix, work, "bench_users" + suffix), "asof_hosted" + suffix, count, timeout);
                requireEnriched(postgres, "asof_hosted" + suffix);
                return rates;
            }));
        }
        if (ours.contains("copy")) {
            sides.add(new Side(COPY, () -> new Rates(Double.NaN,
                    CopyLoad.run(postgres, DATABASE, "copy_rows" + suffix, count, i -> eventFields(i, base)))));
        }
        sides.add(new Side(PEER, () -> run(worker, postgres, "dbz-upsert" + suffix,
                peer(postgres, topic, "dbz_upsert" + suffix, PEER_DEFAULT_BATCH_SIZE), "dbz_upsert" + suffix, count, timeout)));
        sides.add(new Side(PEER_OUR_BATCH, () -> run(worker, postgres, "dbz-upsert-b" + BATCH_SIZE + suffix,
                peer(postgres, topic, "dbz_upsert_b" + BATCH_SIZE + suffix, BATCH_SIZE), "dbz_upsert_b" + BATCH_SIZE + suffix, count,
                timeout)));
        return sides;
    }

    /** Runs the sides one after the other, in reverse when asked; returns each side's rates by name, in the sides' order. */
    private static Map<String, Rates> runSides(List<Side> sides, boolean reverse) throws Exception {
        List<Side> order = new ArrayList<>(sides);
        if (reverse) {
            java.util.Collections.reverse(order);
        }
        Map<String, Rates> byName = new HashMap<>();
        for (Side side : order) {
            byName.put(side.name(), side.drain().run());
        }
        Map<String, Rates> rates = new LinkedHashMap<>();
        sides.forEach(side -> rates.put(side.name(), byName.get(side.name())));
        return rates;
    }

    /** Of an even count, the mean of the middle two. */
    static double median(List<Double> values) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /** "median rows/s (slowest-fastest)", or a dash for a figure the side does not have (COPY's steady rate). */
    private static String spread(double median, List<Double> rounds) {
        if (Double.isNaN(median)) {
            return String.format("%38s", "-");
        }
        double min = rounds.stream().mapToDouble(Double::doubleValue).min().orElseThrow();
        double max = rounds.stream().mapToDouble(Double::doubleValue).max().orElseThrow();
        return String.format("%,10.0f rows/s (%,.0f-%,.0f)", median, min, max);
    }

    /** The machine line benchmarks/run-all collects; a figure that is not a positive number is refused. */
    private static void benchLine(String row, double ours, double peer) {
        if (!(ours > 0) || !(peer > 0) || Double.isInfinite(ours) || Double.isInfinite(peer)) {
            throw new IllegalStateException(row + ": refusing to print a figure that is not a positive number (ours "
                    + ours + ", peer " + peer + ")");
        }
        System.out.printf(java.util.Locale.ROOT, "bench %s ours=%.3f peer=%.3f ratio=%.4f%n", row, ours, peer, ours / peer);
    }

    /**
     * Creates the connector and times it until every row has landed. Both sinks write each partition in offset
     * order, so the run is complete when the last id of each partition (n - 1 and n - 2, ids alternate
     * partitions) has landed: two primary-key probes per poll, where a {@code count(*)} every poll scanned the
     * growing table and took CPU from the sinks it measured. The count is then checked once.
     *
     * <p>The start is the moment the connector and its tasks are first seen RUNNING, polled every 20 ms. The
     * worker reports a task RUNNING once the sink's {@code start} has returned, just before its first poll: from
     * then on the backlog could be consumed, and everything after (the consumer joining its group and fetching,
     * conversion, table creation, every batch and commit) is the sink's to pay, as {@link CopyLoad} pays, from
     * the moment its connection is open, for creating its table, sending every row and committing. Left out on
     * both sides is getting ready: the REST call, the worker's rebalance, the task assignment and the sink's
     * {@code start}, and COPY's connecting (a sink that connects later, in its {@code open}, pays for that). The
     * steady rate would not do against COPY: it leaves out a sink's first batch while COPY pays for all of its
     * rows, and COPY has no first row landed (its rows appear at its commit). The status reaches the REST API
     * through the status topic (a produce and a fetch on this broker), so the start is seen that much and up to
     * one poll late; the rows already there at that moment are printed, and are 0 unless a sink wrote its first
     * batch before it was seen. The end is seen up to one 20 ms poll late; COPY's end is its commit, which makes
     * its rows visible.
     *
     * @return rows per second from the first row landed to the last (the first count left out), and all n rows
     *     from the start to the last
     */
    private static Rates run(ConnectWorker worker, PostgresServer postgres, String connector, Map<String, String> config,
                             String table, int n, Duration timeout) throws SQLException {
        // The harness's own connection, opened before the connector exists, so that opening it cannot delay the
        // first look at the table after the start.
        try (Connection c = postgres.connect(DATABASE)) {
            worker.rest().putConnectorConfig(connector, config);
            long startedAt = awaitRunning(worker, connector, 2, Duration.ofSeconds(120));
            long atStart = exists(c, table) ? count(c, table) : 0;
            long deadline = System.nanoTime() + timeout.toNanos();
            long firstAt = 0;
            long firstCount = 0;
            while (true) {
                long now = System.nanoTime();
                if (firstAt == 0) {
                    long count = exists(c, table) ? count(c, table) : 0;
                    if (count > 0) {
                        firstAt = now;
                        firstCount = count;
                    }
                }
                if (firstAt != 0 && lastIdsLanded(c, table, n)) {
                    long count = count(c, table);
                    if (count != n) {
                        throw new IllegalStateException(table + " holds " + count + " rows when the last record of each partition has"
                                + " landed; " + n + " keys were produced");
                    }
                    double secs = (now - firstAt) / 1e9;
                    double fromStart = (now - startedAt) / 1e9;
                    double steady = secs > 0 ? (n - firstCount) / secs : Double.NaN;
                    System.out.printf("  %s: %,d rows in %.1f s from its start (%,d there then), %.1f s after the first row (%,d at the"
                            + " first count)%n", connector, n, fromStart, atStart, secs, firstCount);
                    worker.rest().deleteConnector(connector);
                    return new Rates(steady, n / fromStart);
                }
                if (now > deadline) {
                    throw new IllegalStateException(connector + " wrote " + (firstAt == 0 ? 0 : count(c, table)) + " of " + n
                            + " rows within " + timeout + "; status " + worker.rest().status(connector).orElse(null));
                }
                Waits.pause(POLL);
            }
        }
    }

    /**
     * Polls the connector's status every {@link #POLL} (the REST client's own wait polls every 500 ms, too coarse for
     * a start) until the connector and exactly {@code tasks} tasks are RUNNING.
     *
     * @return {@link System#nanoTime()} just before the status read that first showed them RUNNING
     */
    private static long awaitRunning(ConnectWorker worker, String connector, int tasks, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        JsonNode last = null;
        while (true) {
            long asked = System.nanoTime();
            Optional<JsonNode> status = worker.rest().status(connector);
            if (status.isPresent()) {
                last = status.get();
                if (allRunning(last, tasks)) {
                    return asked;
                }
            }
            if (asked > deadline) {
                throw new IllegalStateException(connector + ": not RUNNING with " + tasks + " RUNNING tasks within " + timeout
                        + "; last status " + last);
            }
            Waits.pause(POLL);
        }
    }

    private static boolean allRunning(JsonNode status, int tasks) {
        if (!"RUNNING".equals(status.path("connector").path("state").asText()) || status.path("tasks").size() != tasks) {
            return false;
        }
        for (JsonNode task : status.path("tasks")) {
            if (!"RUNNING".equals(task.path("state").asText())) {
                return false;
            }
        }
        return true;
    }

    private static boolean exists(Connection c, String table) throws SQLException {
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT to_regclass(" + quoteLiteral("public." + table) + ") IS NOT NULL")) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    private static boolean lastIdsLanded(Connection c, String table, int n) throws SQLException {
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM public." + PostgresServer.quoteIdentifier(table) + " WHERE id IN ("
                     + (n - 1) + ", " + Math.max(0, n - 2) + ")")) {
            rs.next();
            return rs.getLong(1) == Math.min(n, 2);
        }
    }

    private static long count(Connection c, String table) throws SQLException {
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM public." + PostgresServer.quoteIdentifier(table))) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static String quoteLiteral(String text) {
        return "'" + text.replace("'", "''") + "'";
    }

    private static Map<String, String> ours(PostgresServer pg, String topic, String table, String insertMode) {
        Map<String, String> c = new LinkedHashMap<>();
        c.put("connector.class", "io.asofconnect.sink.ExactlyOnceJdbcSinkConnector");
        c.put("tasks.max", "2");
        c.put("topics", topic);
        c.put("connection.url", pg.jdbcUrl(DATABASE));
        c.put("connection.user", PostgresServer.USER);
        c.put("table.name.format", table);
        c.put("schema.evolution", "BASIC");
        c.put("insert.mode", insertMode);
        c.put("primary.key.mode", "RECORD_KEY");
        c.put("primary.key.fields", "id");
        // Our default, set so that the peer's like-for-like side keeps matching it.
        c.put("batch.size", Integer.toString(BATCH_SIZE));
        return c;
    }

    /** Ours, upsert, joining each event's user_id with the users row valid at its record timestamp. */
    private static Map<String, String> hosted(PostgresServer pg, PostgresServer source, String topic, String table, Path work,
                                              String replica) {
        Map<String, String> c = ours(pg, topic, table, "UPSERT");
        c.put("enrich.table", "public.users");
        c.put("enrich.key.fields", "user_id");
        c.put("enrich.time.source", "RECORD_TIMESTAMP");
        c.put("enrich.output.mode", "FLATTEN");
        c.put("enrich.columns", "plan");
        c.put("enrich.version.metadata", "false");
        c.put("replica.name", replica);
        c.put("replica.database.hostname", source.host());
        c.put("replica.database.port", Integer.toString(source.port()));
        c.put("replica.database.user", PostgresServer.USER);
        c.put("replica.database.dbname", SOURCE_DATABASE);
        c.put("replica.tables", "public.users");
        c.put("replica.slot.name", replica);
        c.put("replica.path", work.resolve(replica).toString());
        // Experiments: -Dasof.bench.hosted.extra=key=value,key=value overrides or adds hosted-side settings.
        for (String kv : System.getProperty("asof.bench.hosted.extra", "").split(",")) {
            if (!kv.isBlank()) {
                c.put(kv.substring(0, kv.indexOf('=')).trim(), kv.substring(kv.indexOf('=') + 1).trim());
            }
        }
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

    /**
     * Debezium's JDBC sink at {@code batchSize}. Its task buffers only within one {@code put} and flushes what is
     * left at the end of it, so a batch never holds more records than one consumer poll returns (500 by default):
     * above that, {@code batch.size} alone would change nothing. So a side above 500 also raises its consumer's
     * {@code max.poll.records} to the batch size, and {@code max.partition.fetch.bytes} to 8 MiB (these records
     * take about 700 bytes each, so 1 MiB held about 1,500), so that one poll, and one transaction, can carry
     * {@code batchSize} records as ours do (ours buffers across puts up to its {@code batch.size}). The worker
     * allows connector client overrides ({@code connector.client.config.override.policy=All}).
     */
    private static Map<String, String> peer(PostgresServer pg, String topic, String table, int batchSize) {
        Map<String, String> c = new LinkedHashMap<>();
        c.put("connector.class", "io.debezium.connector.jdbc.JdbcSinkConnector");
        c.put("tasks.max", "2");
        c.put("topics", topic);
        c.put("connection.url", pg.jdbcUrl(DATABASE));
        c.put("connection.username", PostgresServer.USER);
        c.put("connection.password", "unused");
        c.put("table.name.format", table);
        c.put("schema.evolution", "basic");
        c.put("insert.mode", "upsert");
        c.put("primary.key.mode", "record_key");
        c.put("primary.key.fields", "id");
        c.put("batch.size", Integer.toString(batchSize));
        if (batchSize > PEER_DEFAULT_BATCH_SIZE) {
            c.put("consumer.override.max.poll.records", Integer.toString(batchSize));
            c.put("consumer.override.max.partition.fetch.bytes", Integer.toString(8 * 1024 * 1024));
        }
        return c;
    }

    /**
     * Event i's fields in schema order (id, user_id, amount, category, note, event_time): what is produced to
     * the topic, and what the COPY ceiling loads.
     */
    static Object[] eventFields(int i, long base) {
        return new Object[] {(long) i, (long) (i % USERS), i % 5000, "cat-" + (i % 97),
                "event number " + i + " of the end-to-end benchmark", base + i};
    }

    /** N events with distinct keys {id}, alternating partitions, JsonConverter envelopes with schemas. */
    private static void produce(KafkaBroker broker, String topic, int n, long base) {
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
        // Event times in the past (base), so that a hosted as-of join never waits for the replica's watermark.
        long started = System.nanoTime();
        try (JsonEvents producer = new JsonEvents(broker)) {
            for (int i = 0; i < n; i++) {
                Object[] values = eventFields(i, base);
                ObjectNode p = JsonEvents.payload();
                p.put("id", (Long) values[0]);
                p.put("user_id", (Long) values[1]);
                p.put("amount", (Integer) values[2]);
                p.put("category", (String) values[3]);
                p.put("note", (String) values[4]);
                p.put("event_time", (Long) values[5]);
                ObjectNode key = JsonEvents.payload();
                key.put("id", (long) i);
                producer.sendAsync(topic, i % 2, base + i, JsonEvents.envelope(keySchema, key), JsonEvents.envelope(schema, p));
            }
            producer.flush();
        }
        System.out.printf("  produced %,d records to %s in %.1f s%n", n, topic, (System.nanoTime() - started) / 1e9);
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
