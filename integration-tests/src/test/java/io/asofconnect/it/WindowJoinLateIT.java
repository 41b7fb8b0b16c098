package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import io.asofconnect.it.ClickStream.Sent;
import io.asofconnect.it.ClickStream.Side;
import io.asofconnect.it.JoinOracle.JoinType;
import io.asofconnect.it.JoinOracle.Row;
import io.asofconnect.it.JoinOracle.Window;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.Topics;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Records past the allowed lateness on their own partition, per late policy. DROP: the table is the oracle's over
 * the records that are not late (a late record neither matches nor gets an unmatched row), the late-records metric
 * equals the test's own count, and the ledger of a join that holds everything names exactly those records. DLQ: the
 * same table, and the dead letter queue holds exactly the late records. FAIL: the task fails naming the late
 * record's offset, and nothing of that record or after it on its partition is written.
 */
@ExtendWith(PrintLogsOnFailure.class)
class WindowJoinLateIT {

    private static final int PARTITIONS = 2;
    private static final Window WINDOW = new Window(1_000, 10_000, 2_000);
    /** A window so wide that the join holds every record to the end: its late ledger is never pruned. */
    private static final Window HOLD_ALL = new Window(3_600_000, 3_600_000, WINDOW.lateness());
    private static final long IDLE_TIMEOUT_MS = 3_000;
    private static final String DLQ_TOPIC = "late_dlq";

    private static TestPipeline pipeline;
    private static ConnectWorker worker;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("window-join-late");
        worker = pipeline.distributedWorker("worker", "wj-late");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void dropAndDeadLetterQueueLeaveLateRecordsOutAndCountEachOnce() throws Exception {
        WindowJoinTarget target = new WindowJoinTarget(pipeline.postgres(), pipeline.broker(), "late_joins",
                pipeline.work().resolve("join-state"));
        long seed = System.nanoTime();
        System.out.println("WindowJoinLateIT input from seed " + seed);
        try (JsonEvents producer = new JsonEvents(pipeline.broker())) {
            ClickStream stream = new ClickStream(producer, "late", PARTITIONS, WINDOW.before(), WINDOW.after(), seed)
                    .withLateRecords(0.1, WINDOW.lateness());
            stream.createTopics(pipeline.broker());
            worker.rest().putConnectorConfig("late-drop",
                    target.config(stream, "late_drop", JoinType.FULL, WINDOW, IDLE_TIMEOUT_MS));
            worker.rest().putConnectorConfig("late-ledger",
                    target.config(stream, "late_ledger", JoinType.INNER, HOLD_ALL, IDLE_TIMEOUT_MS));
            Map<String, String> dlq = target.config(stream, "late_dlq", JoinType.FULL, WINDOW, IDLE_TIMEOUT_MS);
            dlq.put("join.late.policy", "DLQ");
            dlq.put("errors.tolerance", "all");
            dlq.put("errors.deadletterqueue.topic.name", DLQ_TOPIC);
            dlq.put("errors.deadletterqueue.topic.replication.factor", "1");
            dlq.put("errors.deadletterqueue.context.headers.enable", "true");
            worker.rest().putConnectorConfig("late-dlq", dlq);
            for (String connector : List.of("late-drop", "late-ledger", "late-dlq")) {
                worker.rest().awaitRunning(connector, 2, Duration.ofSeconds(90));
            }

            List<Sent> sent = stream.run(t -> t < 12_000);
            Set<Sent> late = JoinOracle.late(sent, WINDOW.lateness());
            long withPartners = JoinOracle.lateWithPartners(sent, WINDOW);
            System.out.println("WindowJoinLateIT sent " + sent.size() + " records, " + late.size() + " late, "
                    + withPartners + " of them with a partner in the window");
            Map<String, Long> coverage = JoinOracle.lateCoverage(sent, WINDOW.lateness());
            System.out.println("WindowJoinLateIT lateness coverage " + coverage);
            assertThat(coverage).as("records around the lateness boundary").containsKeys("on the watermark",
                    "1 ms behind the watermark", "late by less than the lateness", "late by the lateness or more",
                    "behind the greatest time, on time");
            assertThat(withPartners).as("late records that would have matched").isPositive();
            List<String> lateCoordinates = late.stream().map(s -> coordinates(stream, s)).toList();

            List<Row> expected = JoinOracle.expected(sent, JoinType.FULL, WINDOW);
            target.awaitSettled("late-drop", stream, PARTITIONS, Duration.ofSeconds(90));
            WindowJoinTarget.assertSameRows("FULL join dropping late records", expected, target.rows("late_drop"));
            assertThat(WindowJoinTarget.lateMetric(worker, "late-drop")).as("late records counted by DROP")
                    .isEqualTo(late.size());

            List<Row> expectedHeld = JoinOracle.expected(sent, JoinType.INNER, HOLD_ALL);
            target.awaitConsumed("late-ledger", stream, PARTITIONS, false, Duration.ofSeconds(90));
            WindowJoinTarget.assertSameRows("INNER join holding everything", expectedHeld, target.rows("late_ledger"));
            assertThat(target.lateLedger("late-ledger")).as("the late ledger of a join that holds every record")
                    .containsExactlyInAnyOrderElementsOf(lateCoordinates);

            target.awaitSettled("late-dlq", stream, PARTITIONS, Duration.ofSeconds(90));
            WindowJoinTarget.assertSameRows("FULL join sending late records to the DLQ", expected,
                    target.rows("late_dlq"));
            assertThat(WindowJoinTarget.lateMetric(worker, "late-dlq")).as("late records counted by DLQ")
                    .isEqualTo(late.size());
            List<ConsumerRecord<byte[], byte[]>> dead = Topics.readAll(pipeline.broker(), DLQ_TOPIC, late.size(),
                    Duration.ofSeconds(60));
            List<String> deadCoordinates = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> r : dead) {
                Map<String, String> h = Topics.headers(r);
                deadCoordinates.add(h.get("__connect.errors.topic") + "/" + h.get("__connect.errors.partition") + "/"
                        + h.get("__connect.errors.offset"));
            }
            assertThat(deadCoordinates).as("the dead letter queue: the late records, once")
                    .containsExactlyInAnyOrderElementsOf(lateCoordinates);
        }
    }

    @Test
    void failStopsTheTaskAtTheLateRecordAndWritesNothingOfItOrAfterIt() throws Exception {
        WindowJoinTarget target = new WindowJoinTarget(pipeline.postgres(), pipeline.broker(), "fail_joins",
                pipeline.work().resolve("join-state-fail"));
        try (JsonEvents producer = new JsonEvents(pipeline.broker())) {
            ClickStream stream = new ClickStream(producer, "fail", 1, WINDOW.before(), WINDOW.after(), 1);
            stream.createTopics(pipeline.broker());
            Map<String, String> config = target.config(stream, "late_fail", JoinType.INNER, WINDOW, 60_000);
            config.put("tasks.max", "1");
            config.put("join.late.policy", "FAIL");
            worker.rest().putConnectorConfig("late-fail", config);
            worker.rest().awaitRunning("late-fail", 1, Duration.ofSeconds(90));

            long base = System.currentTimeMillis();
            List<Sent> sent = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                sent.add(stream.sendNow(Side.LEFT, "early" + i, "/docs", base + i * 1_000));
                sent.add(stream.sendNow(Side.RIGHT, "early" + i, "/docs", base + i * 1_000 + 500));
            }
            // Matches come out at once (INNER): wait until the first five are committed, so that what is missing
            // later says something about the late record.
            Awaitility.await("the five early matches").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
                    .until(() -> target.rowCount("late_fail") >= 5);

            sent.add(stream.sendNow(Side.LEFT, "ahead", "/docs", base + 30_000));
            Sent lateQuery = stream.sendNow(Side.LEFT, "behind", "/docs", base + 10_000);
            sent.add(lateQuery);
            // Would match the late query; it is not late on its own partition.
            sent.add(stream.sendNow(Side.RIGHT, "behind", "/docs", base + 10_500));
            sent.add(stream.sendNow(Side.RIGHT, "ahead", "/docs", base + 30_500));
            for (int i = 0; i < 5; i++) {
                sent.add(stream.sendNow(Side.LEFT, "after" + i, "/docs", base + 31_000 + i * 100));
                sent.add(stream.sendNow(Side.RIGHT, "after" + i, "/docs", base + 31_000 + i * 100 + 50));
            }
            assertThat(JoinOracle.late(sent, WINDOW.lateness())).as("the test's late records").containsExactly(lateQuery);

            JsonNode failed = worker.rest().awaitTaskFailed("late-fail", Duration.ofSeconds(90));
            String trace = failed.path("trace").asText();
            Pattern offset = Pattern.compile("(?<![0-9])" + lateQuery.offset() + "(?![0-9])");
            assertThat(trace.lines().filter(l -> l.contains(stream.leftTopic())).toList())
                    .as("lines of the failed task's trace naming the late record's topic: %s", trace)
                    .anySatisfy(l -> assertThat(offset.matcher(l).find()).as("offset %s in %s", lateQuery.offset(), l)
                            .isTrue());

            List<Row> rows = target.rows("late_fail");
            assertThat(rows).as("rows of the records before the late one").isNotEmpty()
                    .allMatch(r -> r.leftOffset() < lateQuery.offset(), "no row of the late query or a later one");
            assertThat(target.nextOffsets("late-fail", stream.leftTopic(), 1).getOrDefault(0, 0L))
                    .as("committed position of the left partition").isLessThanOrEqualTo(lateQuery.offset());
        }
    }

    private static String coordinates(ClickStream stream, Sent s) {
        String topic = s.event().side() == Side.LEFT ? stream.leftTopic() : stream.rightTopic();
        return topic + "/" + s.partition() + "/" + s.offset();
    }
}
