package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;

import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectRest;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.FreePorts;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Workers join and leave a distributed cluster while events flow: a second worker joins, the first leaves
 * gracefully, a third joins and the second is SIGKILLed; and, in a cluster of its own, a graceful rolling restart
 * of every worker. Tasks move each time; every event lands once.
 */
@ExtendWith(PrintLogsOnFailure.class)
class RebalanceIT {

    private static final String CONNECTOR = "rebalance-page-views";
    private static final String ROLLING = "rolling-page-views";
    private static final int ROLLING_PARTITIONS = 4;
    /** Enough users that the key hash puts events on every partition (checked, not assumed). */
    private static final int ROLLING_USERS = 20;

    private static TestPipeline pipeline;
    private static PostgresServer postgres;
    private static KafkaBroker broker;
    private static Path work;
    private static Path plugins;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("rebalance");
        work = pipeline.work();
        plugins = pipeline.plugins();
        postgres = pipeline.postgres();
        broker = pipeline.broker();
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void joinGracefulLeaveAndSigkillKeepEveryEventExactlyOnce() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 5, "rebalance");
        scenario.createSourceAndTopic(4);
        Map<String, String> config = PageViews.withoutEnrichment(ConfigTemplates.connectorConfig(
                "distributed/page-views-smt-sink.json", scenario.placeholders(work.resolve("secrets"))));
        config.put("batch.size", "100");

        try (ConnectWorker a = worker("worker-a"); JsonEvents producer = new JsonEvents(broker)) {
            a.rest().putConnectorConfig(CONNECTOR, config);
            a.rest().awaitRunning(CONNECTOR, 2, Duration.ofSeconds(90));
            try (ConnectWorker b = worker("worker-b")) {
                try (BackgroundProducer flowing = new BackgroundProducer(scenario, producer, 50)) {
                    b.rest().awaitRunning(CONNECTOR, 2, Duration.ofSeconds(60));

                    a.stop();
                    b.rest().awaitRunningAwayFrom(CONNECTOR, 2, a.workerId(), Duration.ofSeconds(90));

                    try (ConnectWorker c = worker("worker-c")) {
                        c.rest().awaitRunning(CONNECTOR, 2, Duration.ofSeconds(60));
                        b.kill();
                        c.rest().awaitRunningAwayFrom(CONNECTOR, 2, b.workerId(), Duration.ofSeconds(120));
                        flowing.close();
                        scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(120));
                    }
                }
            }
        }
    }

    /**
     * Each worker of two in turn is stopped (SIGTERM: tasks stop and the worker leaves the group), its tasks move
     * to the other, it is started again and gets its share back, all while events flow.
     */
    @Test
    void gracefulRollingRestartOfEveryWorkerKeepsEveryEventExactlyOnce() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, ROLLING_USERS, "rolling");
        scenario.createSourceAndTopic(ROLLING_PARTITIONS);
        Map<String, String> config = PageViews.withoutEnrichment(ConfigTemplates.connectorConfig(
                "distributed/page-views-smt-sink.json", scenario.placeholders(work.resolve("secrets"))));
        config.put("batch.size", "100");

        try (ConnectWorker a = worker("rolling-a", "rolling"); ConnectWorker b = worker("rolling-b", "rolling");
             JsonEvents producer = new JsonEvents(broker)) {
            a.rest().putConnectorConfig(ROLLING, config);
            awaitOneTaskOnEach(a, b);
            try (BackgroundProducer flowing = new BackgroundProducer(scenario, producer, 50)) {
                for (ConnectWorker restarting : List.of(a, b)) {
                    ConnectWorker other = restarting == a ? b : a;
                    restarting.stop();
                    other.rest().awaitRunningAwayFrom(ROLLING, 2, restarting.workerId(), Duration.ofSeconds(90));
                    long before = scenario.targetRowCount();
                    Awaitility.await("the remaining worker to write").atMost(Duration.ofSeconds(60))
                            .pollInterval(Duration.ofMillis(200)).until(() -> scenario.targetRowCount() > before);
                    restarting.restart();
                    awaitOneTaskOnEach(a, b);
                }
            }
            scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(120));
            SinkOffsets offsets = new SinkOffsets(postgres, broker, scenario.targetDb(), ROLLING, scenario.topic(),
                    ROLLING_PARTITIONS);
            Map<Integer, Long> logEnd = offsets.logEnd();
            assertThat(logEnd.values()).as("events on every partition").allMatch(end -> end > 0);
            assertThat(offsets.inTarget()).as("next offset per partition in the target's offsets table")
                    .isEqualTo(logEnd);
        }
    }

    /** Both tasks RUNNING, one on each worker: the restarted worker has its share again. */
    private static void awaitOneTaskOnEach(ConnectWorker a, ConnectWorker b) {
        a.rest().awaitStatus(ROLLING, Duration.ofSeconds(90), "one RUNNING task on each of " + a.workerId() + " and "
                + b.workerId(), status -> {
                    JsonNode tasks = status.path("tasks");
                    Set<String> workers = new HashSet<>();
                    for (JsonNode task : tasks) {
                        if (!"RUNNING".equals(task.path("state").asText())) {
                            return false;
                        }
                        workers.add(ConnectRest.workerIdOf(task));
                    }
                    return "RUNNING".equals(status.path("connector").path("state").asText()) && tasks.size() == 2
                            && workers.equals(Set.of(a.workerId(), b.workerId()));
                });
    }

    private static ConnectWorker worker(String name) {
        return worker(name, "rebalance");
    }

    private static ConnectWorker worker(String name, String group) {
        return ConnectWorker.distributed(name, work,
                ConnectWorker.distributedProperties(broker, group, plugins, FreePorts.pick()));
    }
}
