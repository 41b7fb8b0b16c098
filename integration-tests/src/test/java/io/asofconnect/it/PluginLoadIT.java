package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.FreePorts;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PluginInstaller;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPaths;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The packaged archive, unzipped into plugin.path of a real worker, is discovered and validates configs. */
@ExtendWith(PrintLogsOnFailure.class)
class PluginLoadIT {

    static final String SINK = "io.asofconnect.sink.ExactlyOnceJdbcSinkConnector";
    static final String SMT = "io.asofconnect.transforms.AsOfEnrich";
    static final String JOIN = "io.asofconnect.windowjoin.WindowJoinSinkConnector";
    static final String VIEW = "io.asofconnect.tablejoin.TableJoinSourceConnector";

    /**
     * Validation must not depend on a database being there: the URLs point at a port picked free on loopback,
     * where nothing listens, never at a well-known port another Postgres on the machine might own.
     */
    private static final int NOTHING_LISTENS = FreePorts.pick();

    private static KafkaBroker broker;
    private static ConnectWorker worker;
    private static Path pluginPath;

    @BeforeAll
    static void start() {
        Path work = TestPaths.workDir("plugin-load");
        pluginPath = PluginInstaller.install(TestPaths.pluginZip(), work.resolve("plugins"));
        broker = KafkaBroker.start(work);
        worker = ConnectWorker.distributed("worker", work,
                ConnectWorker.distributedProperties(broker, "plugin-load", pluginPath, FreePorts.pick()));
    }

    @AfterAll
    static void stop() {
        if (worker != null) {
            worker.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void archiveHasTheConfluentHubLayoutAndNoKafkaJars() throws Exception {
        List<Path> tops;
        try (Stream<Path> s = Files.list(pluginPath)) {
            tops = s.toList();
        }
        assertThat(tops).hasSize(1);
        Path root = tops.get(0);
        assertThat(root.getFileName().toString()).startsWith("asof-connect-");
        assertThat(root.resolve("manifest.json")).exists();
        List<String> jars = new ArrayList<>();
        try (Stream<Path> s = Files.list(root.resolve("lib"))) {
            s.forEach(p -> jars.add(p.getFileName().toString()));
        }
        assertThat(jars).anyMatch(j -> j.startsWith("asof-connector-"))
                .anyMatch(j -> j.startsWith("postgresql-"))
                // The worker provides these; a second copy inside the plugin breaks class identity.
                .noneMatch(j -> j.startsWith("kafka-clients-") || j.startsWith("connect-api-")
                        || j.startsWith("connect-runtime-"));
    }

    @Test
    void workerListsTheSinkTheJoinAndTheTransformFromPluginPath() {
        assertThat(worker.rest().pluginClasses()).contains(SINK, JOIN, VIEW, SMT);
    }

    @Test
    void validateWithAWrongValueNamesTheKeyAndTheProblem() {
        Map<String, String> config = Map.of(
                "connector.class", SINK,
                "name", "validate-me",
                "topics", "events",
                "connection.url", "jdbc:mysql://127.0.0.1:" + NOTHING_LISTENS + "/x",
                "insert.mode", "SOMETIMES");
        JsonNode result = worker.rest().validate("ExactlyOnceJdbcSinkConnector", config);

        assertThat(result.path("error_count").asInt()).isGreaterThanOrEqualTo(2);
        assertThat(errorsOf(result, "insert.mode")).isNotEmpty()
                .anySatisfy(e -> assertThat(e).contains("INSERT").contains("UPSERT"));
        assertThat(errorsOf(result, "connection.url")).isNotEmpty()
                .anySatisfy(e -> assertThat(e).containsIgnoringCase("jdbc:postgresql"));
    }

    @Test
    void validateOfAGoodConfigHasNoErrorOnTheSinkKeys() {
        Map<String, String> config = Map.of(
                "connector.class", SINK,
                "name", "validate-good",
                "topics", "events",
                "connection.url", "jdbc:postgresql://127.0.0.1:" + NOTHING_LISTENS + "/target",
                "connection.user", "postgres");
        JsonNode result = worker.rest().validate("ExactlyOnceJdbcSinkConnector", config);
        for (String key : List.of("connection.url", "connection.user", "insert.mode", "primary.key.mode")) {
            assertThat(errorsOf(result, key)).as(key).isEmpty();
        }
    }

    static List<String> errorsOf(JsonNode validation, String key) {
        List<String> errors = new ArrayList<>();
        for (JsonNode config : validation.path("configs")) {
            JsonNode value = config.path("value");
            if (key.equals(value.path("name").asText())) {
                value.path("errors").forEach(e -> errors.add(e.asText()));
            }
        }
        return errors;
    }
}
