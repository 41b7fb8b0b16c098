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

import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPaths;
import io.asofconnect.it.harness.WorkerJmx;
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
     * exists, for the transform as for the sink-hosted enrichment, and the figures are the workload's.
     */
    private static void verifyMetrics(String connector, int produced) throws Exception {
        try (WorkerJmx jmx = WorkerJmx.attach(worker.process())) {
            Map<String, Double> metrics = jmx.pluginMetrics(connector);
            System.out.printf("Plugin metrics of %s: %s%n", connector, metrics);
            // The transform publishes the same enrichment metrics as the sink-hosted enrichment, held records too.
            Set<String> expected = dashboardMetrics();
            assertThat(metrics.keySet()).as("metrics of %s", connector).containsAll(expected);
            assertThat(metrics.get("sink-rows-written-total")).as("rows written, summed over the tasks").isEqualTo(produced);
            assertThat(metrics.get("enrich-hits-total")).as("each event found its user").isGreaterThanOrEqualTo(produced);
            assertThat(metrics.get("enrich-misses-total")).isZero();
            double tasks = 2;
            assertThat(metrics.get("replica-keys")).as("5 users, seen by each of %s tasks", tasks).isEqualTo(5 * tasks);
            assertThat(metrics.get("replica-changes-applied-total")).as("snapshot and plan changes").isGreaterThan(5 * tasks);
            assertThat(metrics.get("replica-snapshot-rows")).isEqualTo(5 * tasks);
            assertThat(metrics.get("replica-watermark-lag-ms") / tasks).as("a caught-up replica's lag").isBetween(0.0, 30_000.0);
            assertThat(metrics.get("replica-slot-retained-wal-bytes")).isGreaterThanOrEqualTo(0);
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
        PageViews scenario = new PageViews(postgres, broker, 5, name);
        scenario.createSourceAndTopic(2);
        Map<String, String> config = ConfigTemplates.connectorConfig(example,
                scenario.placeholders(work.resolve("secrets")));
        String connector = name + "-page-views";
        worker.rest().putConnectorConfig(connector, config);
        worker.rest().awaitRunning(connector, 2, Duration.ofSeconds(90));

        try (JsonEvents producer = new JsonEvents(broker)) {
            scenario.produceInterleaved(producer, 12, 10);
        }
        scenario.awaitAndVerifyTarget(Duration.ofSeconds(120));
        verifyMetrics(connector, scenario.producedCount());
        worker.rest().deleteConnector(connector);
    }
}
