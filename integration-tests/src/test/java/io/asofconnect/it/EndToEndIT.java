package io.asofconnect.it;

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
        worker.rest().deleteConnector(connector);
    }
}
