package io.asofconnect.it;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.FreePorts;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Workers join and leave a distributed cluster while events flow: a second worker joins, the first leaves
 * gracefully, a third joins and the second is SIGKILLed. Tasks move each time; every event lands once.
 */
@ExtendWith(PrintLogsOnFailure.class)
class RebalanceIT {

    private static final String CONNECTOR = "rebalance-page-views";

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

    private static ConnectWorker worker(String name) {
        return ConnectWorker.distributed(name, work,
                ConnectWorker.distributedProperties(broker, "rebalance", plugins, FreePorts.pick()));
    }
}
