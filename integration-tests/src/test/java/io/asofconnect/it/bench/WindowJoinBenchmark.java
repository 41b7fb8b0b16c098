package io.asofconnect.it.bench;

import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.FreePorts;
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
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

/**
 * The {@code window-join-vs-kstreams} row (issue 10): joined output rows per second of our window join
 * ({@code WindowJoinSinkConnector}, loaded from {@code plugin.path} by a real distributed worker, writing into
 * Postgres exactly once) against Kafka Streams 4.3's {@code KStream#join} with
 * {@code JoinWindows.ofTimeDifferenceAndGrace(after, grace).before(0)} and {@code exactly_once_v2}, writing into an
 * output topic whose rows a {@code read_committed} consumer counts ({@link KStreamsPeerProcess}, a JVM of its own
 * started like the worker). Both read the same pre-produced input on the same broker: JSON queries and clicks
 * ({@link QueriesAndClicks}) keyed and joined by session and URL, at 10,000 events per second of event time, on
 * P partitions per topic; an inner join, click time within {@code [query time, query time + after]}.
 *
 * <p>Timing, alike on both sides: from the start of consumption to the last joined row visible. Ours starts when
 * its connector and tasks are first seen RUNNING (as {@code SinkEndToEndBenchmark} times a sink: the tasks then
 * join the consumer group and poll), and ends when every input partition's committed next offset (the offsets
 * table, written in the same transaction as the rows) has reached the end of the input and the output table holds
 * exactly the oracle's count of pairs. The peer starts at the HTTP call that runs {@code KafkaStreams#start()}
 * (its threads then join the group and poll; building the topology and clients came before, untimed, as creating
 * the connector does on our side) and ends when the counting consumer has seen the oracle's count of pairs
 * committed. Both are checked to hold exactly that many rows at the end (no duplicate, nothing missing).
 *
 * <p>Order bias: each side first drains a warm-up pair of topics (a third of N, 10,000 to 100,000 events;
 * discarded), then each measured round drains the measured topics again under new connector, table, application
 * and output topic names, ours first in odd rounds and the peer first in even ones. Each side's figure is its
 * median over the rounds (odd, so one measured round), printed with the spread (slowest and fastest round).
 * Also printed per side: its state at the end of each round (our MapDB file, Kafka Streams' RocksDB directory),
 * as {@code footprint} lines (bytes per input event held). Then, unless {@code -Dasof.bench.join.restart=false}, one
 * round of state size and restart time per side ({@link #restart}).
 *
 * <p>Arguments: {@code [N events, default 200000] [partitions, default 6] [rounds, default 3]}. Options:
 * {@code -Dasof.bench.join.after.ms} (default 600000, the design's 10 minutes), {@code -Dasof.bench.join.grace.ms}
 * (Kafka Streams' grace and our {@code join.allowed.lateness.ms}, default 10000), {@code -Dasof.bench.join.tasks}
 * (our {@code tasks.max} and the peer's {@code num.stream.threads}, default 2, at most P),
 * {@code -Dasof.bench.join.sides=ours,peer} (one side alone prints no {@code bench} line), {@code -Dasof.bench.jar}.
 */
public final class WindowJoinBenchmark {
    static final String ROW = "window-join-vs-kstreams";
    static final String CONNECTOR_CLASS = "io.asofconnect.windowjoin.WindowJoinSinkConnector";
    private static final String OURS = "asof-connect WindowJoinSinkConnector, exactly once, into Postgres";
    private static final String PEER = "Kafka Streams 4.3 KStream#join, exactly_once_v2, into a topic";
    private static final String DATABASE = "bench";
    private static final String OFFSETS_TABLE = "asof_connect_offsets";
    private static final String LEFT = "wj-queries";
    private static final String RIGHT = "wj-clicks";
    private static final String WARM = "-warm";
    private static final int MIN_WARMUP = 10_000;
    private static final int MAX_WARMUP = 100_000;
    private static final Duration POLL = Duration.ofMillis(20);
    private static final Duration COUNT_FALLBACK = Duration.ofMillis(500);
    static final int DEFAULT_ROUNDS = 3;

    private final KafkaBroker broker;
    private final PostgresServer postgres;
    private final ConnectWorker worker;
    /** Replaced when the restart phase kills the peer's JVM and starts another. */
    private KStreamsPeerProcess peer;
    private final Path work;
    private final int partitions;
    private final int tasks;
    private final long afterMs;
    private final long graceMs;
    private final Duration timeout;

    private WindowJoinBenchmark(KafkaBroker broker, PostgresServer postgres, ConnectWorker worker, KStreamsPeerProcess peer,
                                Path work, int partitions, int tasks, long afterMs, long graceMs, Duration timeout) {
        this.broker = broker;
        this.postgres = postgres;
        this.worker = worker;
        this.peer = peer;
        this.work = work;
        this.partitions = partitions;
        this.tasks = tasks;
        this.afterMs = afterMs;
        this.graceMs = graceMs;
        this.timeout = timeout;
    }

    /** The input of one drain: its topics, their end offsets, the pairs it must produce and its events. */
    private record Input(String left, String right, Map<TopicPartition, Long> ends, long pairs, List<QueriesAndClicks.Event> events,
                         long base, long seed) {
    }

    /** One side's round: joined rows per second from its start, and its state's bytes at the end. */
    private record Result(double rate, long stateBytes) {
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0].replace("_", "")) : 200_000;
        int partitions = args.length > 1 ? Integer.parseInt(args[1]) : 6;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : DEFAULT_ROUNDS;
        if (n < 1000 || partitions < 1 || rounds < 1) {
            throw new IllegalArgumentException("arguments: [events >= 1000] [partitions >= 1] [rounds >= 1]");
        }
        long afterMs = Long.getLong("asof.bench.join.after.ms", 600_000);
        long graceMs = Long.getLong("asof.bench.join.grace.ms", 10_000);
        int tasks = Math.min(partitions, Integer.getInteger("asof.bench.join.tasks", 2));
        List<String> sides = List.of(System.getProperty("asof.bench.join.sides", "ours,peer").split(","));
        boolean ours = sides.contains("ours");
        boolean withPeer = sides.contains("peer");
        int warmup = Math.max(MIN_WARMUP, Math.min(MAX_WARMUP, n / 3));
        Duration timeout = Duration.ofSeconds(Math.max(180, n / 500));
        Path work = TestPaths.workDir("bench-window-join");
        if (System.getProperty(ManagedProcess.PRODUCTION_JVMS) == null) {
            System.setProperty(ManagedProcess.PRODUCTION_JVMS, "true");
        }
        System.out.printf("Window-join benchmark: %,d events (queries and clicks, 10,000 events/s of event time), %d partitions per"
                        + " topic, %d task%s / stream thread%s, window [0, %,d ms], grace/lateness %,d ms, %d round%s; work directory %s%n",
                n, partitions, tasks, tasks == 1 ? "" : "s", tasks == 1 ? "" : "s", afterMs, graceMs, rounds, rounds == 1 ? "" : "s", work);
        PostgresServer postgres = null;
        KafkaBroker broker = null;
        ConnectWorker worker = null;
        KStreamsPeerProcess peer = null;
        WindowJoinBenchmark bench = null;
        try {
            broker = KafkaBroker.start(work);
            long base = System.currentTimeMillis() - Math.max(n, warmup) / 10 - 120_000;
            Input warm = input(broker, LEFT + WARM, RIGHT + WARM, warmup, base, 11, partitions, afterMs);
            Input measured = input(broker, LEFT, RIGHT, n, base, 7, partitions, afterMs);
            if (ours) {
                Path plugins = work.resolve("plugins");
                PluginInstaller.install(TestPaths.pluginZip(), plugins);
                postgres = PostgresServer.start(work, "pg");
                postgres.createDatabase(DATABASE);
                worker = ConnectWorker.distributed("worker-1", work,
                        ConnectWorker.distributedProperties(broker, "bench", plugins, FreePorts.pick()));
                if (!worker.rest().pluginClasses().contains(CONNECTOR_CLASS)) {
                    throw new IllegalStateException("the worker did not load " + CONNECTOR_CLASS + " from the plugin archive "
                            + TestPaths.pluginZip() + "; rebuild it (the connector module's assembly takes the window-join jar)");
                }
            }
            if (withPeer) {
                peer = KStreamsPeerProcess.start(broker, work.resolve("kstreams"));
            }
            bench = new WindowJoinBenchmark(broker, postgres, worker, peer, work, partitions, tasks, afterMs,
                    graceMs, timeout);

            System.out.printf("warm-up, %,d events per side (discarded):%n", warmup);
            bench.round(warm, WARM, ours, withPeer, false);
            Map<String, List<Result>> byRound = new LinkedHashMap<>();
            for (int r = 1; r <= rounds; r++) {
                System.out.printf("measured round %d of %d, %,d events per side%s:%n", r, rounds, n, r % 2 == 0 ? ", peer first" : "");
                bench.round(measured, "-r" + r, ours, withPeer, r % 2 == 0)
                        .forEach((name, result) -> byRound.computeIfAbsent(name, k -> new ArrayList<>()).add(result));
            }

            Map<String, Double> median = new LinkedHashMap<>();
            byRound.forEach((name, list) -> median.put(name, median(list.stream().map(Result::rate).toList())));
            System.out.println();
            System.out.printf("Window join, %,d events (%,d queries, %,d clicks; %,d joined pairs), %d partitions, %d task%s/thread%s,"
                            + " broker + worker + Kafka Streams JVM + Postgres on this machine, every side warmed, median of %d round%s"
                            + " (slowest-fastest), joined rows/s from the start of consumption to the last joined row visible:%n",
                    n, (n + 1) / 2, n / 2, measured.pairs(), partitions, tasks, tasks == 1 ? "" : "s", tasks == 1 ? "" : "s", rounds,
                    rounds == 1 ? "" : "s");
            byRound.forEach((name, list) -> System.out.printf("  %-66s %s   state at the end: %s%n", name,
                    spread(median.get(name), list.stream().map(Result::rate).toList()),
                    mib(median(list.stream().map(r -> (double) r.stateBytes()).toList()))));
            byRound.forEach((name, list) -> {
                long bytes = (long) median(list.stream().map(r -> (double) r.stateBytes()).toList());
                if (bytes > 0) {
                    footprint(name.equals(OURS) ? "window-join-ours" : "window-join-kstreams",
                            name.equals(OURS) ? "mapdb-file" : "rocksdb-dir", bytes, n);
                }
            });
            if (median.containsKey(OURS) && median.containsKey(PEER)) {
                System.out.printf("  ours / Kafka Streams: %.2f (goal 1.5)%n", median.get(OURS) / median.get(PEER));
                benchLine(ROW, median.get(OURS), median.get(PEER));
            }
            if (ours && withPeer && Boolean.parseBoolean(System.getProperty("asof.bench.join.restart", "true"))) {
                System.out.println();
                bench.restart(measured);
            }
        } catch (Exception | Error e) {
            ManagedProcess.printTails(System.out, 40);
            throw e;
        } finally {
            if (bench != null && bench.peer != null) {
                bench.peer.close();
            } else if (peer != null) {
                peer.close();
            }
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

    /** Generates, produces and checks one input; the oracle counts its pairs. */
    private static Input input(KafkaBroker broker, String left, String right, int n, long base, long seed, int partitions,
                               long afterMs) {
        broker.createTopic(left, partitions);
        broker.createTopic(right, partitions);
        long started = System.nanoTime();
        List<QueriesAndClicks.Event> events = QueriesAndClicks.generate(n, base, seed);
        long pairs = QueriesAndClicks.matches(events, 0, afterMs);
        long unmatched = QueriesAndClicks.unmatchedQueries(events, 0, afterMs);
        QueriesAndClicks.produce(broker, left, right, events);
        Map<TopicPartition, Long> ends = endOffsets(broker, List.of(left, right), partitions);
        long total = ends.values().stream().mapToLong(Long::longValue).sum();
        if (total != n) {
            throw new IllegalStateException(left + " and " + right + " hold " + total + " records; " + n + " were produced");
        }
        System.out.printf("  produced %,d events to %s and %s in %.1f s: %,d joined pairs expected (%,d queries without a click)%n",
                n, left, right, (System.nanoTime() - started) / 1e9, pairs, unmatched);
        return new Input(left, right, ends, pairs, events, base, seed);
    }

    private static Map<TopicPartition, Long> endOffsets(KafkaBroker broker, List<String> topics, int partitions) {
        Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
        topics.forEach(t -> IntStream.range(0, partitions).forEach(p -> ask.put(new TopicPartition(t, p), OffsetSpec.latest())));
        try (Admin admin = broker.admin()) {
            Map<TopicPartition, Long> ends = new HashMap<>();
            admin.listOffsets(ask).all().get(60, TimeUnit.SECONDS).forEach((tp, info) -> ends.put(tp, info.offset()));
            return ends;
        } catch (Exception e) {
            throw new IllegalStateException("cannot read the end offsets of " + topics, e);
        }
    }

    /** Both sides once on {@code input}, the peer first when asked; results by side, ours first. */
    private Map<String, Result> round(Input input, String suffix, boolean ours, boolean withPeer, boolean peerFirst) throws Exception {
        Map<String, Result> results = new LinkedHashMap<>();
        if (peerFirst && withPeer) {
            results.put(PEER, peer(input, suffix));
        }
        if (ours) {
            results.put(OURS, ours(input, suffix));
        }
        if (!peerFirst && withPeer) {
            results.put(PEER, peer(input, suffix));
        }
        Map<String, Result> ordered = new LinkedHashMap<>();
        if (results.containsKey(OURS)) {
            ordered.put(OURS, results.get(OURS));
        }
        if (results.containsKey(PEER)) {
            ordered.put(PEER, results.get(PEER));
        }
        return ordered;
    }

    // ---- ours ----

    private Result ours(Input input, String suffix) throws SQLException {
        String connector = "wj-ours" + suffix;
        String table = "wj_ours" + suffix.replace('-', '_');
        Path state = work.resolve("ours-state").resolve(connector);
        Result result = drainOurs(input, connector, table, state);
        worker.rest().deleteConnector(connector);
        return result;
    }

    /** Creates our connector on {@code input} and times it until every joined row is visible; leaves it running. */
    private Result drainOurs(Input input, String connector, String table, Path state) throws SQLException {
        Map<String, String> config = oursConfig(input, table, state);
        // The harness's connection, opened before the connector exists (see SinkEndToEndBenchmark#run).
        try (Connection c = postgres.connect(DATABASE)) {
            worker.rest().putConnectorConfig(connector, config);
            long startedAt = awaitRunning(connector, Duration.ofSeconds(120));
            long deadline = System.nanoTime() + timeout.toNanos();
            long lastCount = System.nanoTime();
            long lastStatus = System.nanoTime();
            while (true) {
                long now = System.nanoTime();
                boolean done = false;
                if (offsetsAtEnd(c, connector, input.ends())) {
                    done = rowsAtLeast(c, table, input.pairs());
                } else if (now - lastCount > COUNT_FALLBACK.toNanos()) {
                    // In case the offsets run ahead of or behind the rows in a way this harness does not expect.
                    lastCount = now;
                    done = rowsAtLeast(c, table, input.pairs());
                }
                if (done) {
                    long bytes = bytesUnder(state);
                    double secs = (now - startedAt) / 1e9;
                    long rows = count(c, table);
                    if (rows != input.pairs()) {
                        throw new IllegalStateException(table + " holds " + rows + " rows; the oracle expects " + input.pairs());
                    }
                    System.out.printf(Locale.ROOT, "  %s: %,d joined rows in %.2f s from its start: %,.0f rows/s; MapDB state %s%n", connector,
                            rows, secs, rows / secs, mib(bytes));
                    return new Result(rows / secs, bytes);
                }
                if (now - lastStatus > Duration.ofSeconds(1).toNanos()) {
                    lastStatus = now;
                    requireNotFailed(connector);
                }
                if (now > deadline) {
                    throw new IllegalStateException(connector + " wrote " + (exists(c, table) ? count(c, table) : 0) + " of "
                            + input.pairs() + " rows within " + timeout + "; status " + worker.rest().status(connector).orElse(null));
                }
                Waits.pause(POLL);
            }
        }
    }

    private Map<String, String> oursConfig(Input input, String table, Path state) {
        Map<String, String> c = new LinkedHashMap<>();
        c.put("connector.class", CONNECTOR_CLASS);
        c.put("tasks.max", Integer.toString(tasks));
        c.put("topics", input.left() + "," + input.right());
        // The records' keys are plain strings (the peer reads them with Serdes.String()); ours joins on the values' fields.
        c.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        c.put("join.left.topic", input.left());
        c.put("join.right.topic", input.right());
        c.put("join.left.key.fields", "session,url");
        c.put("join.right.key.fields", "session,url");
        c.put("join.window.before.ms", "0");
        c.put("join.window.after.ms", Long.toString(afterMs));
        c.put("join.type", "INNER");
        c.put("join.allowed.lateness.ms", Long.toString(graceMs));
        c.put("join.state.path", state.toString());
        c.put("join.output.table", table);
        c.put("join.admin.bootstrap.servers", broker.bootstrapServers());
        c.put("connection.url", postgres.jdbcUrl(DATABASE));
        c.put("connection.user", PostgresServer.USER);
        c.put("schema.evolution", "BASIC");
        for (String kv : System.getProperty("asof.bench.join.extra", "").split(",")) {
            if (!kv.isBlank()) {
                c.put(kv.substring(0, kv.indexOf('=')).trim(), kv.substring(kv.indexOf('=') + 1).trim());
            }
        }
        return c;
    }

    /** Every input partition's committed next offset (written with the rows, in one transaction) at the end of the input. */
    private static boolean offsetsAtEnd(Connection c, String connector, Map<TopicPartition, Long> ends) throws SQLException {
        if (!exists(c, OFFSETS_TABLE)) {
            return false;
        }
        Map<TopicPartition, Long> next = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT topic, kafka_partition, next_offset FROM public." + OFFSETS_TABLE
                + " WHERE connector_name = ?")) {
            ps.setString(1, connector);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    next.put(new TopicPartition(rs.getString(1), rs.getInt(2)), rs.getLong(3));
                }
            }
        }
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            if (e.getValue() > 0 && next.getOrDefault(e.getKey(), -1L) < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    private static boolean rowsAtLeast(Connection c, String table, long rows) throws SQLException {
        return exists(c, table) && count(c, table) >= rows;
    }

    /**
     * Polls the connector's status every {@link #POLL} until it and all its tasks (at least one) are RUNNING; see
     * {@code SinkEndToEndBenchmark#awaitRunning}.
     *
     * @return {@link System#nanoTime()} just before the status read that first showed them RUNNING
     */
    private long awaitRunning(String connector, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        JsonNode last = null;
        while (true) {
            long asked = System.nanoTime();
            Optional<JsonNode> status = worker.rest().status(connector);
            if (status.isPresent()) {
                last = status.get();
                if (allRunning(last)) {
                    return asked;
                }
                if (failed(last)) {
                    throw new IllegalStateException(connector + " FAILED: " + last);
                }
            }
            if (asked > deadline) {
                throw new IllegalStateException(connector + ": not RUNNING with " + tasks + " RUNNING tasks within " + wait
                        + "; last status " + last);
            }
            Waits.pause(POLL);
        }
    }

    private boolean allRunning(JsonNode status) {
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

    private static boolean failed(JsonNode status) {
        if ("FAILED".equals(status.path("connector").path("state").asText())) {
            return true;
        }
        for (JsonNode task : status.path("tasks")) {
            if ("FAILED".equals(task.path("state").asText())) {
                return true;
            }
        }
        return false;
    }

    private void requireNotFailed(String connector) {
        worker.rest().status(connector).ifPresent(s -> {
            if (failed(s)) {
                throw new IllegalStateException(connector + " FAILED: " + s);
            }
        });
    }

    // ---- the peer ----

    private Result peer(Input input, String suffix) {
        String app = "wj-kstreams" + suffix;
        String out = "wj-kstreams-out" + suffix;
        broker.createTopic(out, partitions);
        double secs = drainPeer(input, app, out, input.pairs(), true);
        long bytes = peer.close(app);
        System.out.printf(Locale.ROOT, "  %s: %,d joined rows in %.2f s from its start: %,.0f rows/s; RocksDB state %s%n", app,
                input.pairs(), secs, input.pairs() / secs, mib(bytes));
        return new Result(input.pairs() / secs, bytes);
    }

    /**
     * Builds and starts application {@code app} on {@code input} into {@code out} and waits until a
     * {@code read_committed} consumer has seen {@code rows} rows there (counted from the topic's beginning); with
     * {@code exact}, also checks that no more than that come before the application is closed.
     *
     * @return seconds from the start call to the last of those rows visible
     */
    private double drainPeer(Input input, String app, String out, long rows, boolean exact) {
        peer.prepare(app, input.left(), input.right(), out, tasks, afterMs, graceMs);
        try (CommittedCounter counter = new CommittedCounter(broker.bootstrapServers(), out, partitions, rows)) {
            long startedAt = System.nanoTime();
            peer.start(app);
            long deadline = startedAt + timeout.toNanos();
            long lastState = startedAt;
            while (counter.reachedAt() == 0) {
                long now = System.nanoTime();
                if (now - lastState > Duration.ofSeconds(1).toNanos()) {
                    lastState = now;
                    String state = peer.state(app);
                    if (state.contains("ERROR") || state.contains("NOT_RUNNING")) {
                        throw new IllegalStateException(app + " is " + state + " with " + counter.count() + " of " + rows
                                + " rows; see " + peer.process().logFile());
                    }
                }
                if (now > deadline) {
                    throw new IllegalStateException(app + " wrote " + counter.count() + " of " + rows + " rows within "
                            + timeout + " (state " + peer.state(app) + "; Kafka Streams drops records it finds late)");
                }
                Waits.pause(POLL);
            }
            double secs = (counter.reachedAt() - startedAt) / 1e9;
            if (exact && counter.count() != rows) {
                throw new IllegalStateException(out + " holds " + counter.count() + " committed rows; the oracle expects " + rows);
            }
            return secs;
        }
    }

    // ---- restart ----

    /**
     * State size and restart time, one round per side (printed, with a {@code bench window-join-restart} line without a
     * goal: ours = our seconds, peer = Kafka Streams' seconds, ratio = peer / ours). Each side drains the measured
     * input once more and stays running, holding the whole input in its windows (the window outlasts the input's
     * event-time span); then both JVMs are SIGKILLed (our worker, the Kafka Streams JVM) and a tail of new events is
     * produced (the generator's next events: clicks on queries of the input's last 30 s, so the tail joins only
     * against restored state). Each side is then started again alone, the same connector or application on the
     * same state directory, and timed from the launch of its JVM to the last of the tail's joined rows visible: ours
     * rewinds to its lowest held offset and replays the input (writing nothing twice); Kafka Streams, whose state
     * an unclean stop under exactly-once wipes, restores both window stores from their changelogs. Ours also pays
     * for the worker's own start (plugin scan, group join), printed separately.
     */
    private void restart(Input input) throws SQLException {
        int tailEvents = Math.max(1_000, input.events().size() / 50);
        List<QueriesAndClicks.Event> all = QueriesAndClicks.generate(input.events().size() + tailEvents, input.base(), input.seed());
        List<QueriesAndClicks.Event> tail = all.subList(input.events().size(), all.size());
        long tailPairs = QueriesAndClicks.matches(all, 0, afterMs) - input.pairs();
        System.out.printf("restart: each side drains the %,d events again and keeps running; then both JVMs are SIGKILLed, %,d more"
                + " events (%,d more joined pairs) are produced, and each side is started again alone:%n", input.events().size(), tailEvents, tailPairs);

        String connector = "wj-ours-restart";
        String table = "wj_ours_restart";
        Path state = work.resolve("ours-state").resolve(connector);
        drainOurs(input, connector, table, state);
        String app = "wj-kstreams-restart";
        String out = "wj-kstreams-out-restart";
        broker.createTopic(out, partitions);
        double drained = drainPeer(input, app, out, input.pairs(), true);
        System.out.printf(Locale.ROOT, "  %s: %,d joined rows in %.2f s from its start: %,.0f rows/s%n", app, input.pairs(), drained,
                input.pairs() / drained);
        long oursBytes = bytesUnder(state);
        long peerBytes = bytesUnder(peer.stateDir(app));

        worker.kill();
        Path peerDir = peer.process().logFile().getParent();
        peer.kill();
        QueriesAndClicks.produce(broker, input.left(), input.right(), tail);
        long expected = input.pairs() + tailPairs;

        long launched = System.nanoTime();
        worker.restart();
        double workerReady = (System.nanoTime() - launched) / 1e9;
        double oursSecs;
        try (Connection c = postgres.connect(DATABASE)) {
            long deadline = launched + timeout.toNanos();
            long lastStatus = launched;
            while (true) {
                long now = System.nanoTime();
                long rows = count(c, table);
                if (rows >= expected) {
                    oursSecs = (now - launched) / 1e9;
                    if (rows != expected) {
                        throw new IllegalStateException(table + " holds " + rows + " rows after the restart; the oracle expects " + expected);
                    }
                    break;
                }
                if (now - lastStatus > Duration.ofSeconds(1).toNanos()) {
                    lastStatus = now;
                    requireNotFailed(connector);
                }
                if (now > deadline) {
                    throw new IllegalStateException(connector + " holds " + rows + " of " + expected + " rows " + timeout
                            + " after its worker's restart; status " + worker.rest().status(connector).orElse(null));
                }
                Waits.pause(POLL);
            }
        }
        worker.rest().deleteConnector(connector);

        launched = System.nanoTime();
        peer = KStreamsPeerProcess.start(broker, peerDir);
        double peerReady = (System.nanoTime() - launched) / 1e9;
        double peerSecs = peerReady + drainPeer(input, app, out, expected, true);
        peer.close(app);

        System.out.printf(Locale.ROOT, "  state on disk when killed (%,d events held): ours (MapDB file) %s, Kafka Streams (RocksDB"
                + " directory; what its memtables held was not flushed) %s%n",
                input.events().size(), mib(oursBytes), mib(peerBytes));
        System.out.printf(Locale.ROOT, "  restart, JVM launch to the tail's last joined row visible: ours %.2f s (worker ready after %.2f s),"
                + " Kafka Streams %.2f s (JVM ready after %.2f s)%n", oursSecs, workerReady, peerSecs, peerReady);
        // No footprint line here: Kafka Streams' memtables are not on disk at the kill, so the end-of-round lines
        // (its directory after a clean close) are the ones to compare.
        durationLine("window-join-restart", oursSecs, peerSecs);
    }

    // ---- helpers ----

    private static boolean exists(Connection c, String table) throws SQLException {
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT to_regclass('public." + table.replace("'", "''") + "') IS NOT NULL")) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    private static long count(Connection c, String table) throws SQLException {
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM public." + PostgresServer.quoteIdentifier(table))) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static long bytesUnder(Path dir) {
        if (!Files.exists(dir)) {
            return 0;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    return 0;
                }
            }).sum();
        } catch (IOException | UncheckedIOException e) {
            return 0; // deleted while walked: the task stopped meanwhile
        }
    }

    /** Of an even count, the mean of the middle two. */
    static double median(List<Double> values) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    private static String spread(double median, List<Double> rounds) {
        double min = Collections.min(rounds);
        double max = Collections.max(rounds);
        return String.format(Locale.ROOT, "%,10.0f rows/s (%,.0f-%,.0f)", median, min, max);
    }

    private static String mib(double bytes) {
        return bytes <= 0 ? "-" : String.format(Locale.ROOT, "%.1f MiB", bytes / (1024 * 1024));
    }

    /** The machine line benchmarks/run-all collects; a figure that is not a positive number is refused. */
    private static void benchLine(String row, double ours, double peer) {
        if (!(ours > 0) || !(peer > 0) || Double.isInfinite(ours) || Double.isInfinite(peer)) {
            throw new IllegalStateException(row + ": refusing to print a figure that is not a positive number (ours "
                    + ours + ", peer " + peer + ")");
        }
        System.out.printf(Locale.ROOT, "bench %s ours=%.3f peer=%.3f ratio=%.4f%n", row, ours, peer, ours / peer);
    }

    /** A row of durations (as {@code BenchLine.duration}): ratio = peer / ours. */
    private static void durationLine(String row, double oursSeconds, double peerSeconds) {
        if (!(oursSeconds > 0) || !(peerSeconds > 0)) {
            throw new IllegalStateException(row + ": refusing to print a duration that is not positive (ours " + oursSeconds
                    + ", peer " + peerSeconds + ")");
        }
        System.out.printf(Locale.ROOT, "bench %s ours=%.3f peer=%.3f ratio=%.4f%n", row, oursSeconds, peerSeconds, peerSeconds / oursSeconds);
    }

    /** A {@code footprint} line (as {@code BenchLine.footprint}): state bytes per input event at the end of a drain. */
    private static void footprint(String side, String what, long bytes, long events) {
        System.out.printf(Locale.ROOT, "footprint %s %s bytes=%d versions=%d per_version=%.1f%n", side, what, bytes, events,
                (double) bytes / events);
    }
}
