package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.time.Duration;
import java.util.Map;
import java.util.stream.IntStream;

import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPaths;
import io.asofconnect.it.harness.WorkerJmx;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The whole product on real parts: source Postgres with {@code users}, page views on a two-partition topic
 * interleaved with plan changes, the sink (enrichment hosted in it, config from
 * {@code config-examples/distributed/page-views-enriched-sink.json}) on a distributed worker, target Postgres.
 */
@ExtendWith(PrintLogsOnFailure.class)
class EndToEndIT {

    private static final int USERS = 5;
    private static final int TASKS = 2;
    private static final int ROUNDS = 12;
    private static final int EVENTS_PER_ROUND = 10;
    /** How far ahead of this machine's clock the replica may read the source's: one probe's round trip, generously. */
    private static final long LEAD_TOLERANCE_MS = 2_000;

    private static TestPipeline pipeline;
    private static PostgresServer postgres;
    private static KafkaBroker broker;
    private static ConnectWorker worker;
    private static Path work;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("end-to-end");
        work = pipeline.work();
        postgres = pipeline.postgres();
        broker = pipeline.broker();
        worker = pipeline.distributedWorker("worker-1", "e2e");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void asOfEnrichInFrontOfTheSinkJoinsEveryEventOnceWithThePlanValidAtItsTime() throws Exception {
        run("smt", "distributed/page-views-smt-sink.json");
    }

    @Test
    void enrichmentHostedInTheSinkJoinsEveryEventOnceWithThePlanValidAtItsTime() throws Exception {
        run("hosted", "distributed/page-views-enriched-sink.json");
    }

    /**
     * What an operator's dashboard reads, over JMX from the worker: every metric the example dashboard names
     * exists, for the transform as for the sink-hosted enrichment, and the figures are the workload's. Both tasks
     * read the one replica their worker keeps for them, so each replica figure, summed over the tasks, is twice it.
     *
     * @param lastEventTime a time at or before the last event's: every event was enriched, so the replica's
     *                      watermark has passed it
     */
    private static void verifyMetrics(String connector, int produced, long lastEventTime) throws Exception {
        try (WorkerJmx jmx = WorkerJmx.attach(worker.process())) {
            // The lag is read between two readings of the watermark it is measured from: the watermark only moves
            // on, so the lag's own lies between them.
            Map<String, Double> before = jmx.pluginMetrics(connector);
            long readFrom = System.currentTimeMillis();
            Map<String, Double> metrics = jmx.pluginMetrics(connector);
            long readUntil = System.currentTimeMillis();
            Map<String, Double> after = jmx.pluginMetrics(connector);
            System.out.printf("Plugin metrics of %s: %s%n", connector, metrics);
            // The transform publishes the same enrichment metrics as the sink-hosted enrichment, held records too.
            Set<String> expected = dashboardMetrics();
            assertThat(metrics.keySet()).as("metrics of %s", connector).containsAll(expected);
            assertThat(metrics.get("sink-rows-written-total")).as("rows written, summed over the tasks").isEqualTo(produced);
            // Every user exists from the start and no event was delivered twice (the group was settled before the
            // first one): each event's lookup found its user exactly once.
            assertThat(metrics.get("enrich-hits-total")).as("each event found its user, once").isEqualTo(produced);
            assertThat(metrics.get("enrich-misses-total")).isZero();
            assertThat(metrics.get("enrich-out-of-history-total")).isZero();
            assertThat(metrics.get("enrich-late-records-total")).isZero();
            assertThat(metrics.get("replica-keys")).as("%s users, seen by each of %s tasks", USERS, TASKS).isEqualTo(USERS * TASKS);
            assertThat(metrics.get("replica-snapshot-rows")).isEqualTo(USERS * TASKS);
            assertThat(metrics.get("replica-changes-applied-total"))
                    .as("the snapshot's %s rows and the %s plan changes committed, seen by each of %s tasks", USERS, ROUNDS, TASKS)
                    .isEqualTo((USERS + ROUNDS) * TASKS);
            double watermarkBefore = before.get("replica-watermark") / TASKS;
            double watermarkAfter = after.get("replica-watermark") / TASKS;
            assertThat(watermarkBefore).as("the watermark, past every event's time").isGreaterThanOrEqualTo(lastEventTime);
            // Lag = the source's clock, read by the replica, less the watermark. That clock is this machine's, which
            // the replica reads at most one probe's round trip ahead (LEAD_TOLERANCE_MS), never behind.
            double lag = metrics.get("replica-watermark-lag-ms") / TASKS;
            assertThat(lag).as("the source's clock less the watermark, read between %s and %s with the watermark"
                            + " between %s and %s", readFrom, readUntil, (long) watermarkBefore, (long) watermarkAfter)
                    .isNotNaN()
                    .isGreaterThanOrEqualTo(readFrom - watermarkAfter)
                    .isLessThanOrEqualTo(readUntil - watermarkBefore + LEAD_TOLERANCE_MS);
            // Each probe reads what the slot retains right after writing its own message to the WAL, which the slot
            // cannot have confirmed yet: the slot always holds some WAL then.
            assertThat(metrics.get("replica-slot-retained-wal-bytes")).as("WAL the slot retains").isNotNaN().isPositive();
            assertThat(metrics.get("sink-fenced-commits-total")).isZero();
        }
    }

    /** The plugin metrics config-examples/monitoring/grafana-dashboard.json names, as JMX attributes. */
    private static Set<String> dashboardMetrics() throws Exception {
        String json = Files.readString(TestPaths.configExamples().resolve("monitoring/grafana-dashboard.json"));
        Set<String> names = new TreeSet<>();
        Matcher m = Pattern.compile("asof_([a-z0-9_]+)").matcher(json);
        while (m.find()) {
            names.add(m.group(1).replace('_', '-'));
        }
        assertThat(names).as("the dashboard names metrics").hasSizeGreaterThan(20);
        return names;
    }

    private static void run(String name, String example) throws Exception {
        PageViews scenario = new PageViews(postgres, broker, USERS, name);
        scenario.createSourceAndTopic(TASKS);
        Map<String, String> config = ConfigTemplates.connectorConfig(example,
                scenario.placeholders(work.resolve("secrets")));
        String connector = name + "-page-views";
        worker.rest().putConnectorConfig(connector, config);
        worker.rest().awaitRunning(connector, TASKS, Duration.ofSeconds(90));
        awaitSettled(connector);

        long lastEventTime;
        try (JsonEvents producer = new JsonEvents(broker)) {
            scenario.produceInterleaved(producer, ROUNDS, EVENTS_PER_ROUND);
            // One more event, whose time is at least this: the watermark must pass it before it can be written.
            lastEventTime = System.currentTimeMillis();
            scenario.produceEvents(producer, 1);
        }
        scenario.awaitAndVerifyTarget(Duration.ofSeconds(120));
        verifyMetrics(connector, scenario.producedCount(), lastEventTime);
        worker.rest().deleteConnector(connector);
    }

    /**
     * Waits until each task consumes one partition. With the group settled, no event is delivered to one task and
     * then again to another after a rebalance, so the lookups counted are one per event. (That every plan change
     * is streamed rather than read by the snapshot, PageViews sees to: it waits for the replica's slot first.)
     */
    private static void awaitSettled(String connector) {
        try (WorkerJmx jmx = WorkerJmx.attach(worker.process())) {
            Awaitility.await("each task of " + connector + " assigned one partition")
                    .atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
                    .until(() -> IntStream.range(0, TASKS).allMatch(t -> jmx.sinkTaskMetric(connector, t, "partition-count") == 1));
        }
    }
}
