package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
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
 * The target Postgres goes away while events flow: first a clean restart, then a crash (SIGKILL of every
 * Postgres process, WAL recovery on start). The sink retries within its limits; nothing is lost or doubled.
 */
@ExtendWith(PrintLogsOnFailure.class)
class TargetRestartIT {

    private static final String CONNECTOR = "restart-page-views";

    private static TestPipeline pipeline;
    private static PostgresServer postgres;
    private static KafkaBroker broker;
    private static ConnectWorker worker;
    private static Path work;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("target-restart");
        work = pipeline.work();
        postgres = pipeline.postgres();
        broker = pipeline.broker();
        worker = pipeline.distributedWorker("worker", "restart");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void restartAndCrashOfTheTargetMidStreamLoseAndDoubleNothing() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 5, "restart");
        scenario.createSourceAndTopic(2);
        Map<String, String> config = PageViews.withoutEnrichment(ConfigTemplates.connectorConfig(
                "distributed/page-views-smt-sink.json", scenario.placeholders(work.resolve("secrets"))));
        config.put("batch.size", "50");
        config.put("retry.backoff.ms", "1000");
        config.put("max.retries", "60");
        worker.rest().putConnectorConfig(CONNECTOR, config);
        worker.rest().awaitRunning(CONNECTOR, 2, Duration.ofSeconds(90));

        try (JsonEvents producer = new JsonEvents(broker);
             BackgroundProducer flowing = new BackgroundProducer(scenario, producer, 20)) {
            awaitGrowth(scenario, 100);
            postgres.restart();
            awaitGrowth(scenario, 100);
            postgres.crash();
            postgres.startAgain();
            awaitGrowth(scenario, 100);
        }
        scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(120));
        assertThat(worker.rest().awaitRunning(CONNECTOR, 2, Duration.ofSeconds(10))).isNotNull();
    }

    private static void awaitGrowth(PageViews scenario, long rows) throws Exception {
        long before = countOrZero(scenario);
        Awaitility.await("the sink to write " + rows + " more rows").atMost(Duration.ofSeconds(120))
                .pollInterval(Duration.ofMillis(500)).ignoreExceptions()
                .until(() -> scenario.targetRowCount() >= before + rows);
    }

    private static long countOrZero(PageViews scenario) {
        try {
            return scenario.targetRowCount();
        } catch (java.sql.SQLException notUpYet) {
            return 0;
        }
    }
}
