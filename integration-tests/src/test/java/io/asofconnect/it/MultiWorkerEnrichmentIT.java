package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
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
import io.asofconnect.it.harness.TestPaths;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Hosted enrichment on two distributed workers sharing one connector config
 * ({@code config-examples/distributed/page-views-enriched-sink-per-worker.json}): {@code ${env:...}} in
 * {@code replica.slot.name} and {@code replica.path} is resolved on the worker that runs the task (Connect stores
 * task configs with the references put back and resolves them per worker), so each worker's replica has its own
 * slot and store. One worker is SIGKILLed mid-stream; its task moves to the other worker, whose replica serves it.
 */
@ExtendWith(PrintLogsOnFailure.class)
class MultiWorkerEnrichmentIT {

    private static final String CONNECTOR = "multi-worker-page-views";
    private static final String EXAMPLE = "distributed/page-views-enriched-sink-per-worker.json";
    private static final String PROVIDERS = "distributed/worker-env-provider.properties";

    private static TestPipeline pipeline;
    private static PostgresServer postgres;
    private static KafkaBroker broker;
    private static Path work;
    private static Path plugins;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("multi-worker");
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
    void eachWorkerHasItsOwnSlotAndAfterASigkillEveryEventLandsOnceWithThePlanValidAtItsTime() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 5, "multi");
        scenario.createSourceAndTopic(4);
        Map<String, String> config = ConfigTemplates.connectorConfig(EXAMPLE,
                scenario.placeholders(work.resolve("secrets")));
        assertThat(config.get("replica.slot.name")).as("the example names the slot per worker")
                .isEqualTo("asof_users_${env:ASOF_WORKER_ID}");

        try (ConnectWorker a = worker("a"); ConnectWorker b = worker("b"); JsonEvents producer = new JsonEvents(broker)) {
            a.rest().putConnectorConfig(CONNECTOR, config);
            a.rest().awaitStatus(CONNECTOR, Duration.ofSeconds(120), "2 RUNNING tasks, one on each worker",
                    s -> runningTaskWorkers(s, 2).equals(Set.of(a.workerId(), b.workerId())));
            Awaitility.await("a replication slot per worker on the source").atMost(Duration.ofSeconds(90))
                    .pollInterval(Duration.ofMillis(500))
                    .until(() -> sourceSlots().containsAll(Set.of("asof_users_a", "asof_users_b")));
            assertThat(sourceSlots()).as("no slot with an unresolved reference or a shared name")
                    .allMatch(slot -> slot.matches("asof_users_[ab]"));

            scenario.produceInterleaved(producer, 6, 10);
            Awaitility.await("both tasks writing").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
                    .until(() -> scenario.targetRowCount() > 0);
            assertThat(storeFiles(a)).as("worker a's replica store, in its own replica.path").isNotEmpty();
            assertThat(storeFiles(b)).as("worker b's replica store, in its own replica.path").isNotEmpty();

            try (BackgroundProducer flowing = new BackgroundProducer(scenario, producer, 20)) {
                long before = scenario.targetRowCount();
                Awaitility.await("the sink writing while events flow").atMost(Duration.ofSeconds(60))
                        .pollInterval(Duration.ofMillis(100)).until(() -> scenario.targetRowCount() > before);
                b.kill();
            }
            // Plan changes after the kill: the moved task reads them from worker a's replica.
            scenario.produceInterleaved(producer, 6, 10);
            a.rest().awaitRunningAwayFrom(CONNECTOR, 2, b.workerId(), Duration.ofSeconds(120));
            scenario.produceInterleaved(producer, 3, 10);

            scenario.awaitAndVerifyTarget(Duration.ofSeconds(180));
            a.rest().deleteConnector(CONNECTOR);
        }
    }

    /** Worker properties from the example fragment (config providers, env allowlist) over the harness defaults. */
    private static ConnectWorker worker(String id) throws IOException {
        String name = "worker-" + id;
        Map<String, String> props = ConnectWorker.distributedProperties(broker, "multi", plugins, FreePorts.pick());
        Properties providers = new Properties();
        try (Reader r = Files.newBufferedReader(TestPaths.configExamples().resolve(PROVIDERS), StandardCharsets.UTF_8)) {
            providers.load(r);
        }
        providers.stringPropertyNames().forEach(k -> props.put(k, providers.getProperty(k)));
        Path replicaDir = work.resolve(name).resolve("replica");
        return ConnectWorker.distributed(name, work, props,
                Map.of("ASOF_WORKER_ID", id, "ASOF_REPLICA_DIR", replicaDir.toString()));
    }

    /** Workers of the RUNNING tasks, or an empty set unless connector and exactly {@code tasks} tasks are RUNNING. */
    private static Set<String> runningTaskWorkers(JsonNode status, int tasks) {
        Set<String> workers = new HashSet<>();
        if (!"RUNNING".equals(status.path("connector").path("state").asText()) || status.path("tasks").size() != tasks) {
            return workers;
        }
        for (JsonNode task : status.path("tasks")) {
            if (!"RUNNING".equals(task.path("state").asText())) {
                return Set.of();
            }
            workers.add(ConnectRest.workerIdOf(task));
        }
        return workers;
    }

    private static Set<String> sourceSlots() throws SQLException {
        Set<String> slots = new HashSet<>();
        try (Connection c = postgres.connect("postgres");
             PreparedStatement ps = c.prepareStatement("SELECT slot_name FROM pg_replication_slots WHERE database = ?")) {
            ps.setString(1, "multi_shop");
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    slots.add(rs.getString(1));
                }
            }
        }
        return slots;
    }

    private static Set<String> storeFiles(ConnectWorker worker) {
        Path dir = worker.dir().resolve("replica");
        if (!Files.isDirectory(dir)) {
            return Set.of();
        }
        try (var files = Files.list(dir)) {
            Set<String> names = new HashSet<>();
            files.forEach(f -> names.add(f.getFileName().toString()));
            return names;
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot list " + dir, e);
        }
    }
}
