package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectRest;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.Topics;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The sink's password comes from a {@code ${file:...}} reference (FileConfigProvider) and Postgres really checks
 * it (scram-sha-256 for the sink's role): the connector writes, and the password shows neither in the REST views
 * of the connector, nor in the worker's log, nor in the DLQ headers of a bad record, nor in the trace of a task
 * given a wrong one. JDBC URLs carrying driver properties that load classes or write files are refused by
 * validation before anything runs.
 */
@ExtendWith(PrintLogsOnFailure.class)
class SecretsIT {

    private static final String ROLE = "secret_sink";
    private static final String PASSWORD = "pw-" + UUID.randomUUID();
    private static final String SINK_CLASS = "io.asofconnect.sink.ExactlyOnceJdbcSinkConnector";

    private static TestPipeline pipeline;
    private static PostgresServer postgres;
    private static KafkaBroker broker;
    private static ConnectWorker worker;
    private static Path work;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("secrets");
        work = pipeline.work();
        postgres = pipeline.postgres();
        broker = pipeline.broker();
        postgres.createLoginRole(ROLE, PASSWORD);
        postgres.requirePassword(ROLE);
        worker = pipeline.distributedWorker("worker", "secrets");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void aPasswordFromTheFileProviderAuthenticatesAndIsShownOrLoggedNowhere() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 3, "secret");
        scenario.createSourceAndTopic(1);
        grantSchema(scenario);
        assertThatThrownBy(() -> postgres.connect(scenario.targetDb(), ROLE, "not-" + PASSWORD).close())
                .as("the server checks the role's password, so this test could fail")
                .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("28P01"));
        postgres.connect(scenario.targetDb(), ROLE, PASSWORD).close();

        String connector = "secret-page-views";
        Path secrets = secretsFile("sink.properties", PASSWORD);
        Map<String, String> config = sinkAsRole(scenario, secrets);
        config.put("errors.tolerance", "all");
        config.put("errors.deadletterqueue.topic.name", "dlq_secret_errors");
        config.put("errors.deadletterqueue.topic.replication.factor", "1");
        config.put("errors.deadletterqueue.context.headers.enable", "true");
        worker.rest().putConnectorConfig(connector, config);
        worker.rest().awaitRunning(connector, 1, Duration.ofSeconds(90));
        try (JsonEvents producer = new JsonEvents(broker)) {
            scenario.produceEvents(producer, 10);
            producer.send(scenario.topic(), 0, System.currentTimeMillis(), JsonEvents.int64Key(1),
                    "{\"schema\":{\"type\":\"string\",\"optional\":false},\"payload\":\"no struct\"}"
                            .getBytes(StandardCharsets.UTF_8));
            scenario.produceEvents(producer, 10);
        }
        scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(60));

        String reference = "${file:" + secrets + ":password}";
        JsonNode shown = worker.rest().get("connectors/" + connector + "/config").body();
        assertThat(shown.path("connection.password").asText()).as("the stored reference, not its value")
                .isEqualTo(reference);
        for (String view : List.of("connectors/" + connector, "connectors/" + connector + "/config",
                "connectors/" + connector + "/tasks", "connectors/" + connector + "/status",
                "connectors?expand=info&expand=status")) {
            ConnectRest.Response r = worker.rest().get(view);
            assertThat(r.ok()).as("GET " + view).isTrue();
            assertThat(r.raw()).as("GET " + view).doesNotContain(PASSWORD);
        }
        List<ConsumerRecord<byte[], byte[]>> dlq = Topics.readAll(broker, "dlq_secret_errors", 1, Duration.ofSeconds(60));
        assertThat(dlq).hasSize(1);
        assertThat(Topics.headers(dlq.get(0))).containsKey("__connect.errors.exception.stacktrace")
                .allSatisfy((name, value) -> assertThat(value).as("DLQ header " + name).doesNotContain(PASSWORD));
        worker.rest().deleteConnector(connector);
        assertNotInLogs(PASSWORD);
    }

    @Test
    void aWrongPasswordFailsTheTaskWithAdviceAndWithoutEitherPassword() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 3, "wrongpw");
        scenario.createSourceAndTopic(1);
        grantSchema(scenario);
        String wrong = "wrong-" + UUID.randomUUID();
        String connector = "wrongpw-page-views";
        worker.rest().putConnectorConfig(connector, sinkAsRole(scenario, secretsFile("wrong.properties", wrong)));

        JsonNode failed = worker.rest().awaitTaskFailed(connector, Duration.ofSeconds(60));
        assertThat(failed.path("trace").asText()).contains("SQLState 28P01")
                .contains("check connection.user and connection.password")
                .doesNotContain(wrong).doesNotContain(PASSWORD);
        worker.rest().deleteConnector(connector);
        assertNotInLogs(wrong);
    }

    @Test
    void urlsWithClassLoadingOrFileWritingDriverPropertiesAreRefusedByValidation() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 1, "badurl");
        String base = postgres.jdbcUrl(scenario.targetDb());
        Map<String, String> refused = Map.of(
                "socketFactory", base + "?socketFactory=org.example.Evil&socketFactoryArg=x",
                "loggerFile", base + "?loggerFile=evil.log&loggerLevel=DEBUG",
                "sslfactory", base + "?ssl=true&sslfactory=org.example.Evil");
        for (Map.Entry<String, String> e : refused.entrySet()) {
            Map<String, String> config = sinkAsRole(scenario, secretsFile("sink.properties", PASSWORD));
            config.put("connection.url", e.getValue());
            JsonNode result = worker.rest().validate(SINK_CLASS, config);
            assertThat(result.path("error_count").asInt()).as("errors for " + e.getKey()).isPositive();
            assertThat(urlErrors(result)).as("connection.url errors for " + e.getKey())
                    .anySatisfy(m -> assertThat(m).contains("'" + e.getKey() + "'").contains("remove it from the URL"));

            String connector = "badurl-" + e.getKey().toLowerCase(java.util.Locale.ROOT);
            ConnectRest.Response put = worker.rest().put("connectors/" + connector + "/config", config);
            assertThat(put.status()).as("PUT config with " + e.getKey()).isEqualTo(400);
            assertThat(put.raw()).contains(e.getKey()).doesNotContain(PASSWORD);
            assertThat(worker.rest().get("connectors/" + connector).status()).as("never created").isEqualTo(404);
        }
    }

    private static List<String> urlErrors(JsonNode validation) {
        List<String> errors = new ArrayList<>();
        for (JsonNode entry : validation.path("configs")) {
            if ("connection.url".equals(entry.path("value").path("name").asText())) {
                entry.path("value").path("errors").forEach(m -> errors.add(m.asText()));
            }
        }
        return errors;
    }

    /** The plain sink (no enrichment) as {@link #ROLE}, its password a reference into {@code secrets}. */
    private static Map<String, String> sinkAsRole(PageViews scenario, Path secrets) throws Exception {
        Map<String, String> config = PageViews.withoutEnrichment(ConfigTemplates.connectorConfig(
                "distributed/page-views-smt-sink.json", scenario.placeholders(work.resolve("secrets"))));
        config.put("tasks.max", "1");
        config.put("connection.user", ROLE);
        config.put("connection.password", "${file:" + secrets + ":password}");
        return config;
    }

    private static Path secretsFile(String name, String password) throws java.io.IOException {
        Path file = work.resolve("secrets").resolve(name);
        Files.createDirectories(file.getParent());
        Files.writeString(file, "password=" + password + "\n", StandardCharsets.UTF_8);
        return file;
    }

    private static void grantSchema(PageViews scenario) throws SQLException {
        try (Connection c = postgres.connect(scenario.targetDb()); Statement s = c.createStatement()) {
            s.execute("GRANT USAGE, CREATE ON SCHEMA public TO " + ROLE);
        }
    }

    /** The worker's log (Connect's own output and the plugin's, DEBUG for io.asofconnect) and the broker's. */
    private static void assertNotInLogs(String secret) throws java.io.IOException {
        assertThat(Files.readString(worker.logFile(), StandardCharsets.UTF_8)).as("the worker's log")
                .doesNotContain(secret);
        assertThat(Files.readString(broker.process().logFile(), StandardCharsets.UTF_8)).as("the broker's log")
                .doesNotContain(secret);
    }
}
