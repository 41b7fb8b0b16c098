package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.Waits;
import io.asofconnect.it.harness.WorkerJmx;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The target Postgres is down for many retry intervals while events keep coming. A sink whose retry limit
 * outlasts the outage stays RUNNING with its partitions paused (its consumer stops reading, however much is
 * produced) and catches up alone when the target returns; a sink with a short limit fails once the limit is
 * spent, with a message saying nothing was lost, and a restart catches it up. Both land every event exactly once.
 */
@ExtendWith(PrintLogsOnFailure.class)
class TargetOutageIT {

    private static final String PATIENT = "patient-page-views";
    private static final String BRIEF = "brief-page-views";
    private static final long BACKOFF_MS = 1000;
    private static final int BATCH = 100;
    /** Fifteen retry intervals: several, and well within the patient sink's limit. */
    private static final Duration OUTAGE = Duration.ofMillis(15 * BACKOFF_MS);
    /** Five times what a paused consumer may have read (one batch buffered, one poll in flight). */
    private static final int PRODUCED_DURING_OUTAGE = 1000;
    /** At 1 s each, minutes: far beyond the outage even when the producer is slow on a loaded machine. */
    private static final int PATIENT_RETRIES = 120;

    private static TestPipeline pipeline;
    private static PostgresServer postgres;
    private static KafkaBroker broker;
    private static ConnectWorker worker;
    private static Path work;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("target-outage");
        work = pipeline.work();
        postgres = pipeline.postgres();
        broker = pipeline.broker();
        worker = pipeline.distributedWorker("worker", "outage");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void anOutageLongerThanSeveralRetriesPausesTheSinkWithinItsLimitAndLosesAndDoublesNothing() throws Exception {
        PageViews patient = new PageViews(postgres, broker, 3, "patient");
        PageViews brief = new PageViews(postgres, broker, 3, "brief");
        patient.createSourceAndTopic(1);
        brief.createSourceAndTopic(1);
        worker.rest().putConnectorConfig(PATIENT, sinkConfig(patient, PATIENT_RETRIES));
        worker.rest().putConnectorConfig(BRIEF, sinkConfig(brief, 2));
        worker.rest().awaitRunning(PATIENT, 1, Duration.ofSeconds(90));
        worker.rest().awaitRunning(BRIEF, 1, Duration.ofSeconds(90));

        try (JsonEvents producer = new JsonEvents(broker); WorkerJmx jmx = WorkerJmx.attach(worker.process())) {
            patient.produceEvents(producer, 200);
            brief.produceEvents(producer, 200);
            awaitRows(patient, 200);
            awaitRows(brief, 200);
            assertThat(jmx.pluginMetric(PATIENT, 0, "sink-rows-written-total")).isEqualTo(200);
            assertThat(jmx.pluginMetric(PATIENT, 0, "sink-transactions-total")).isGreaterThanOrEqualTo(2);
            assertThat(jmx.pluginMetric(PATIENT, 0, "sink-batch-size-max")).isBetween(1.0, (double) BATCH);
            assertThat(jmx.pluginMetric(PATIENT, 0, "sink-retries-total")).isZero();

            postgres.stop();
            Instant down = Instant.now();
            double readBefore = jmx.sinkTaskMetric(PATIENT, 0, "sink-record-read-total");
            brief.produceEvents(producer, BATCH);
            patient.produceEvents(producer, PRODUCED_DURING_OUTAGE);

            JsonNode failed = worker.rest().awaitTaskFailed(BRIEF, Duration.ofSeconds(60));
            assertThat(failed.path("trace").asText()).contains("stayed unavailable through 2 retries (max.retries)")
                    .contains("nothing was lost");
            do {
                String state = worker.rest().status(PATIENT).map(s -> s.path("tasks").path(0).path("state").asText())
                        .orElse("(no status)");
                assertThat(state).as("the patient sink's task, " + Duration.between(down, Instant.now()).toMillis()
                        + " ms into the outage").isEqualTo("RUNNING");
                Waits.pause(Duration.ofMillis(500));
            } while (Instant.now().isBefore(down.plus(OUTAGE)));
            double readDuring = jmx.sinkTaskMetric(PATIENT, 0, "sink-record-read-total") - readBefore;
            assertThat(readDuring).as("records the patient sink's consumer read while the target was down, of "
                    + PRODUCED_DURING_OUTAGE + " produced: its partitions are paused")
                    .isLessThanOrEqualTo(2.0 * BATCH);
            assertThat(jmx.pluginMetric(PATIENT, 0, "sink-retries-total")).as("retries during a %s outage at %d ms backoff",
                    OUTAGE, BACKOFF_MS).isGreaterThanOrEqualTo(3);
            assertThat(jmx.pluginMetric(PATIENT, 0, "sink-rows-written-total")).as("nothing is written while the target is down")
                    .isEqualTo(200);
            System.out.printf("Outage: the patient sink read %.0f of %d records; worker heap %s%n", readDuring,
                    PRODUCED_DURING_OUTAGE, jmx.heap());

            postgres.startAgain();
            patient.produceEvents(producer, 100);
            patient.awaitAndVerifyExactlyOnce(Duration.ofSeconds(120));
            assertThat(worker.rest().awaitRunning(PATIENT, 1, Duration.ofSeconds(10))).isNotNull();
            assertThat(jmx.pluginMetric(PATIENT, 0, "sink-rows-written-total")).as("each row written once, by the task's own count")
                    .isEqualTo(200 + PRODUCED_DURING_OUTAGE + 100);

            worker.rest().restartTask(BRIEF, 0);
            worker.rest().awaitRunning(BRIEF, 1, Duration.ofSeconds(60));
            brief.awaitAndVerifyExactlyOnce(Duration.ofSeconds(120));
            assertThat(jmx.pluginMetric(BRIEF, 0, "sink-rewinds-total")).as("the restarted task rewound its partition").isEqualTo(1);
            assertThat(jmx.pluginMetric(BRIEF, 0, "sink-rows-written-total")).as("the restarted task wrote what the failed one could not")
                    .isEqualTo(BATCH);
        }
    }

    /** The plain sink, one task, small batches and polls so that what a paused consumer did not read shows. */
    private static Map<String, String> sinkConfig(PageViews scenario, int maxRetries) throws Exception {
        Map<String, String> config = PageViews.withoutEnrichment(ConfigTemplates.connectorConfig(
                "distributed/page-views-smt-sink.json", scenario.placeholders(work.resolve("secrets"))));
        config.put("tasks.max", "1");
        config.put("batch.size", Integer.toString(BATCH));
        config.put("consumer.override.max.poll.records", Integer.toString(BATCH));
        config.put("retry.backoff.ms", Long.toString(BACKOFF_MS));
        config.put("max.retries", Integer.toString(maxRetries));
        return config;
    }

    private static void awaitRows(PageViews scenario, long rows) {
        Awaitility.await(rows + " rows in " + scenario.targetDb()).atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(250)).until(() -> scenario.targetRowCount() >= rows);
    }
}
