package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import io.asofconnect.it.JoinOracle.JoinType;
import io.asofconnect.it.JoinOracle.Window;
import io.asofconnect.it.harness.ConnectRest;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The window join needs partition p of both topics in one task. Topics with different partition counts, and a
 * consumer assignor other than Range (which would split partition pairs across tasks), are refused when the
 * connector is configured (PUT .../config answers 400, the validation names the reason on the option), and nothing
 * is created. The same configuration on co-partitioned topics is accepted, so the refusal is about the counts.
 */
@ExtendWith(PrintLogsOnFailure.class)
class CoPartitioningIT {

    private static final Window WINDOW = new Window(0, 10_000, 2_000);

    private static TestPipeline pipeline;
    private static ConnectWorker worker;
    private static WindowJoinTarget target;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("co-partitioning");
        worker = pipeline.distributedWorker("worker", "wj-cp");
        target = new WindowJoinTarget(pipeline.postgres(), pipeline.broker(), "cp_joins",
                pipeline.work().resolve("join-state"));
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void topicsWithDifferentPartitionCountsAreRefusedAndNothingIsWritten() throws Exception {
        try (JsonEvents producer = new JsonEvents(pipeline.broker())) {
            ClickStream stream = new ClickStream(producer, "cp", 3, WINDOW.before(), WINDOW.after(), 1);
            pipeline.broker().createTopic(stream.leftTopic(), 4);
            pipeline.broker().createTopic(stream.rightTopic(), 3);
            Map<String, String> config = target.config(stream, "cp_out", JoinType.INNER, WINDOW, 3_000);
            config.put("name", "cp-mismatch");

            JsonNode validation = worker.rest().validate(WindowJoinTarget.CONNECTOR_CLASS, config);
            assertThat(validation.path("error_count").asInt()).as("validation errors %s", allErrors(validation)).isOne();
            assertThat(errorsOf(validation, "join.right.topic")).as("validation errors on join.right.topic")
                    .anySatisfy(e -> assertNamesBothTopicsAndCounts(e, stream));

            ConnectRest.Response put = worker.rest().put("connectors/cp-mismatch/config", config);
            assertThat(put.status()).as("PUT config of non-co-partitioned topics: %s", put.raw()).isEqualTo(400);
            assertNamesBothTopicsAndCounts(put.raw(), stream);
            assertNothingCreated("cp-mismatch", "cp_out", stream);
        }
    }

    @Test
    void anAssignorOtherThanRangeIsRefused() throws Exception {
        try (JsonEvents producer = new JsonEvents(pipeline.broker())) {
            ClickStream stream = new ClickStream(producer, "cpa", 3, WINDOW.before(), WINDOW.after(), 1);
            stream.createTopics(pipeline.broker());
            Map<String, String> config = target.config(stream, "cpa_out", JoinType.INNER, WINDOW, 3_000);
            config.put("consumer.override.partition.assignment.strategy",
                    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");

            ConnectRest.Response put = worker.rest().put("connectors/cp-cooperative/config", config);
            assertThat(put.status()).as("PUT config with a cooperative assignor: %s", put.raw()).isEqualTo(400);
            assertThat(put.raw()).contains("partition.assignment.strategy");
            assertNothingCreated("cp-cooperative", "cpa_out", stream);
        }
    }

    @Test
    void theSameConfigurationOnCoPartitionedTopicsIsAccepted() throws Exception {
        try (JsonEvents producer = new JsonEvents(pipeline.broker())) {
            ClickStream stream = new ClickStream(producer, "cpok", 3, WINDOW.before(), WINDOW.after(), 1);
            stream.createTopics(pipeline.broker());
            Map<String, String> config = target.config(stream, "cpok_out", JoinType.INNER, WINDOW, 3_000);
            config.put("name", "cp-ok");

            JsonNode validation = worker.rest().validate(WindowJoinTarget.CONNECTOR_CLASS, config);
            assertThat(validation.path("error_count").asInt()).as("validation errors %s", allErrors(validation)).isZero();
            worker.rest().putConnectorConfig("cp-ok", config);
            worker.rest().awaitRunning("cp-ok", 2, Duration.ofSeconds(90));
            worker.rest().deleteConnector("cp-ok");
        }
    }

    private static void assertNothingCreated(String connector, String table, ClickStream stream) throws Exception {
        assertThat(worker.rest().get("connectors/" + connector).status()).as("GET connectors/%s", connector)
                .isEqualTo(404);
        assertThat(target.tableExists(table)).as("output table %s", table).isFalse();
        if (target.tableExists("asof_connect_offsets")) {
            assertThat(target.nextOffsets(connector, stream.leftTopic(), 4)).isEmpty();
            assertThat(target.nextOffsets(connector, stream.rightTopic(), 3)).isEmpty();
        }
        assertThat(target.heldFrom(connector, stream.leftTopic())).isEmpty();
    }

    private static void assertNamesBothTopicsAndCounts(String message, ClickStream stream) {
        assertThat(message).as("the reason").contains(stream.leftTopic()).contains(stream.rightTopic())
                .containsPattern("(?<![0-9])4(?![0-9])").containsPattern("(?<![0-9])3(?![0-9])");
    }

    private static List<String> allErrors(JsonNode validation) {
        List<String> errors = new ArrayList<>();
        for (JsonNode c : validation.path("configs")) {
            c.path("value").path("errors").forEach(e -> errors.add(c.path("value").path("name").asText() + ": " + e.asText()));
        }
        return errors;
    }

    private static List<String> errorsOf(JsonNode validation, String option) {
        List<String> errors = new ArrayList<>();
        for (JsonNode c : validation.path("configs")) {
            if (option.equals(c.path("value").path("name").asText())) {
                c.path("value").path("errors").forEach(e -> errors.add(e.asText()));
            }
        }
        return errors;
    }
}
