package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;

import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectRest;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import org.apache.kafka.common.GroupState;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The consumer group's committed offsets disagree with the target's offsets table: moved ahead of it on some
 * partitions (trusting the group would skip records) and behind it on the others (trusting the group would write
 * records again). The group is moved with the Admin client while the connector is stopped, because the REST
 * {@code PATCH .../offsets} goes through the connector and moves the target's table too. After the resume (a
 * rebalance that assigns every partition again) the target's table must win on every partition.
 *
 * <p>One task takes all partitions in a single rebalance. With two tasks that join at different moments, the
 * second join revokes the first task's partitions, Connect commits the offsets the task reports (the target's) and
 * the consumer starts again from them: that would hide a task that trusted the group's offsets.
 */
@ExtendWith(PrintLogsOnFailure.class)
class GroupOffsetsIT {

    private static final String CONNECTOR = "group-offsets-page-views";
    private static final int PARTITIONS = 4;
    /** Enough users that the key hash puts events on every partition (checked, not assumed). */
    private static final int USERS = 20;

    private static TestPipeline pipeline;
    private static ConnectWorker worker;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("group-offsets");
        worker = pipeline.distributedWorker("worker", "group-offsets");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void theTargetsOffsetsWinOverAGroupMovedAheadOnSomePartitionsAndBehindOnTheOthers() throws Exception {
        PageViews scenario = new PageViews(pipeline.postgres(), pipeline.broker(), USERS, "groupoffsets");
        scenario.createSourceAndTopic(PARTITIONS);
        SinkOffsets offsets = new SinkOffsets(pipeline.postgres(), pipeline.broker(), scenario.targetDb(), CONNECTOR,
                scenario.topic(), PARTITIONS);
        Map<String, String> config = PageViews.withoutEnrichment(ConfigTemplates.connectorConfig(
                "distributed/page-views-smt-sink.json", scenario.placeholders(pipeline.work().resolve("secrets"))));
        config.put("batch.size", "50");
        config.put("tasks.max", "1");
        ConnectRest rest = worker.rest();
        rest.putConnectorConfig(CONNECTOR, config);
        rest.awaitRunning(CONNECTOR, 1, Duration.ofSeconds(90));

        try (JsonEvents producer = new JsonEvents(pipeline.broker())) {
            scenario.produceEvents(producer, 400);
            scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(90));
            Map<Integer, Long> applied = offsets.logEnd();
            assertThat(applied.values()).as("events on every partition, so that each one tests something")
                    .allMatch(end -> end > 0);
            awaitOffsets("the target's offsets table at the log end", offsets::inTarget, applied);

            stopConnectorAndAwaitEmptyGroup(rest, offsets);
            // Produced while stopped: the records a group moved ahead would skip.
            scenario.produceEvents(producer, 400);
            Map<Integer, Long> logEnd = offsets.logEnd();
            assertThat(logEnd).allSatisfy((p, end) -> assertThat(end).as("new records on partition %d", p)
                    .isGreaterThan(applied.get(p)));

            Map<Integer, Long> moved = SinkOffsets.map(PARTITIONS, p -> p % 2 == 0 ? logEnd.get(p) : 0L);
            offsets.moveGroup(moved);
            assertThat(offsets.inGroup()).as("the group, moved ahead on even and behind on odd partitions")
                    .isEqualTo(moved);
            assertThat(offsets.inTarget()).as("the target's offsets table, untouched by moving the group")
                    .isEqualTo(applied);

            rest.put("connectors/" + CONNECTOR + "/resume", Map.of());
            rest.awaitRunning(CONNECTOR, 1, Duration.ofSeconds(90));
            scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(90));
            assertThat(offsets.inTarget()).as("the target's offsets table after the resume").isEqualTo(logEnd);
            // Connect commits what the task reports, which is the target's offsets: the group is put right.
            awaitOffsets("the group's committed offsets back in line with the target", offsets::inGroup, logEnd);
        }
    }

    private static void stopConnectorAndAwaitEmptyGroup(ConnectRest rest, SinkOffsets offsets) {
        ConnectRest.Response stopped = rest.put("connectors/" + CONNECTOR + "/stop", Map.of());
        assertThat(stopped.ok()).as("PUT /connectors/%s/stop: HTTP %d %s", CONNECTOR, stopped.status(), stopped.raw())
                .isTrue();
        rest.awaitStatus(CONNECTOR, Duration.ofSeconds(60), "STOPPED without tasks",
                s -> "STOPPED".equals(s.path("connector").path("state").asText()) && s.path("tasks").isEmpty());
        // The broker refuses to move the offsets of a group that still has members.
        Awaitility.await("group " + offsets.groupId() + " without members").atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(500)).until(() -> offsets.groupState() == GroupState.EMPTY);
    }

    private static void awaitOffsets(String what, java.util.concurrent.Callable<Map<Integer, Long>> actual,
                                     Map<Integer, Long> expected) {
        Awaitility.await(what + " " + expected).atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500))
                .until(actual, expected::equals);
    }
}
