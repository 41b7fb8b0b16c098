package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The sink runs as an ordinary role, authenticated by password. A DBA revokes its INSERT and UPDATE on the offsets
 * (fencing) table while it runs: the task fails with a message naming the table and the grant it needs, never the
 * password, and nothing of the refused flush stays; after the grant a task restart brings it back and every event
 * lands exactly once.
 */
@ExtendWith(PrintLogsOnFailure.class)
class PrivilegesIT {

    private static final String CONNECTOR = "grants-page-views";
    private static final String ROLE = "sink_writer";
    private static final String OFFSETS_TABLE = "asof_connect_offsets";
    private static final String PASSWORD = "pw-" + UUID.randomUUID();

    private static TestPipeline pipeline;
    private static PostgresServer postgres;
    private static KafkaBroker broker;
    private static ConnectWorker worker;
    private static Path work;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("privileges");
        work = pipeline.work();
        postgres = pipeline.postgres();
        broker = pipeline.broker();
        worker = pipeline.distributedWorker("worker", "grants");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void revokedOffsetsTablePrivilegesFailTheTaskActionablyAndARestartAfterTheGrantResumesExactlyOnce()
            throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 3, "grants");
        scenario.createSourceAndTopic(1);
        postgres.createLoginRole(ROLE, PASSWORD);
        postgres.requirePassword(ROLE);
        asDba(scenario, "GRANT USAGE, CREATE ON SCHEMA public TO " + ROLE);
        worker.rest().putConnectorConfig(CONNECTOR, sinkAsRole(scenario));
        worker.rest().awaitRunning(CONNECTOR, 1, Duration.ofSeconds(90));

        try (JsonEvents producer = new JsonEvents(broker)) {
            scenario.produceEvents(producer, 10);
            awaitRows(scenario, 10);

            asDba(scenario, "REVOKE INSERT, UPDATE ON " + OFFSETS_TABLE + " FROM " + ROLE);
            scenario.produceEvents(producer, 10);
            JsonNode failed = worker.rest().awaitTaskFailed(CONNECTOR, Duration.ofSeconds(60));
            assertThat(failed.path("trace").asText())
                    .contains("SQLState 42501").contains("permission denied for table " + OFFSETS_TABLE)
                    .contains("grant the user " + ROLE + " SELECT, INSERT, UPDATE on the offsets table public."
                            + OFFSETS_TABLE)
                    .contains("restart the task")
                    .doesNotContain(PASSWORD);
            assertThat(scenario.targetRowCount()).as("the refused flush's rows were rolled back with it")
                    .isEqualTo(10);

            asDba(scenario, "GRANT INSERT, UPDATE ON " + OFFSETS_TABLE + " TO " + ROLE);
            worker.rest().restartTask(CONNECTOR, 0);
            worker.rest().awaitRunning(CONNECTOR, 1, Duration.ofSeconds(60));
            scenario.produceEvents(producer, 10);
        }
        scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(60));
        assertThat(Files.readString(worker.logFile(), StandardCharsets.UTF_8)).as("the worker's log")
                .doesNotContain(PASSWORD);
    }

    /** The plain sink (no enrichment) as {@link #ROLE}, its password from a secrets file via the file provider. */
    private static Map<String, String> sinkAsRole(PageViews scenario) throws Exception {
        Map<String, String> config = PageViews.withoutEnrichment(ConfigTemplates.connectorConfig(
                "distributed/page-views-smt-sink.json", scenario.placeholders(work.resolve("secrets"))));
        Path secrets = work.resolve("secrets").resolve("sink.properties");
        Files.writeString(secrets, "password=" + PASSWORD + "\n", StandardCharsets.UTF_8);
        config.put("tasks.max", "1");
        config.put("connection.user", ROLE);
        config.put("connection.password", "${file:" + secrets + ":password}");
        return config;
    }

    private static void asDba(PageViews scenario, String sql) throws java.sql.SQLException {
        try (Connection c = postgres.connect(scenario.targetDb()); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    private static void awaitRows(PageViews scenario, long rows) {
        Awaitility.await(rows + " rows in the target").atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(250)).until(() -> scenario.targetRowCount() >= rows);
    }
}
