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
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * SIGKILL of the worker JVM while it writes; a new JVM of the same worker (same group, same directory, so the
 * replica reopens its store) takes over; the stream goes on with more plan changes. Every event must be in the
 * target exactly once and joined with the plan valid at its time.
 */
@ExtendWith(PrintLogsOnFailure.class)
class WorkerCrashIT {

    private static TestPipeline pipeline;
    private static PostgresServer postgres;
    private static KafkaBroker broker;
    private static ConnectWorker worker;
    private static Path work;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("worker-crash");
        work = pipeline.work();
        postgres = pipeline.postgres();
        broker = pipeline.broker();
        worker = pipeline.distributedWorker("worker", "crash");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void sigkillOfTheWorkerMidStreamLosesAndDoublesNothing() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 5, "crash");
        scenario.createSourceAndTopic(2);
        Map<String, String> config = ConfigTemplates.connectorConfig("distributed/page-views-smt-sink.json",
                scenario.placeholders(work.resolve("secrets")));
        config.put("batch.size", "50");
        String connector = "crash-page-views";
        worker.rest().putConnectorConfig(connector, config);
        worker.rest().awaitRunning(connector, 2, Duration.ofSeconds(90));

        try (JsonEvents producer = new JsonEvents(broker)) {
            scenario.produceInterleaved(producer, 4, 10);
            scenario.produceEvents(producer, 1500);
            Awaitility.await("the sink to start writing").atMost(Duration.ofSeconds(90))
                    .pollInterval(Duration.ofMillis(100)).until(() -> scenario.targetRowCount() > 0);
            long atKill = scenario.targetRowCount();
            worker.kill();
            System.out.println("SIGKILLed the worker with " + atKill + " of " + scenario.producedCount()
                    + " events in the target");

            scenario.produceInterleaved(producer, 4, 10);
            worker.restart();
            worker.rest().awaitRunning(connector, 2, Duration.ofSeconds(120));
            scenario.produceInterleaved(producer, 3, 10);
        }
        scenario.awaitAndVerifyTarget(Duration.ofSeconds(180));
    }
}
