package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.asofconnect.it.ClickStream.Sent;
import io.asofconnect.it.JoinOracle.JoinType;
import io.asofconnect.it.JoinOracle.Row;
import io.asofconnect.it.JoinOracle.Window;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The stream-stream window join on real parts (plugin from plugin.path, a distributed worker, a KRaft broker,
 * Postgres): random queries and clicks ({@link ClickStream}), out of order within the allowed lateness, joined on
 * (session, url) with event times from a field, by three connectors on the same input: INNER, LEFT and FULL. Each
 * table must be exactly the nested-loop oracle's rows ({@link JoinOracle}), offsets from the producer, and the
 * unmatched rows of the last records, which only the idle rule can finalize, must come out after the input stops.
 */
@ExtendWith(PrintLogsOnFailure.class)
class WindowJoinIT {

    private static final int PARTITIONS = 3;
    private static final Window WINDOW = new Window(1_000, 10_000, 2_000);
    private static final long IDLE_TIMEOUT_MS = 3_000;
    /** Event time during which new sessions start; the stream then drains (about 30 s of event time in all). */
    private static final long SESSIONS_FOR_MS = 12_000;
    private static final List<JoinType> TYPES = List.of(JoinType.INNER, JoinType.LEFT, JoinType.FULL);

    private static TestPipeline pipeline;
    private static ConnectWorker worker;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("window-join");
        worker = pipeline.distributedWorker("worker", "wj");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void innerLeftAndFullJoinsOfOutOfOrderQueriesAndClicksAreTheNestedLoopsRows() throws Exception {
        WindowJoinTarget target = new WindowJoinTarget(pipeline.postgres(), pipeline.broker(), "joins",
                pipeline.work().resolve("join-state"));
        long seed = System.nanoTime();
        System.out.println("WindowJoinIT input from seed " + seed);
        List<Sent> sent;
        Map<JoinType, List<Row>> atInputEnd = new LinkedHashMap<>();
        try (JsonEvents producer = new JsonEvents(pipeline.broker())) {
            ClickStream stream = new ClickStream(producer, "wj", PARTITIONS, WINDOW.before(), WINDOW.after(), seed);
            stream.createTopics(pipeline.broker());
            for (JoinType type : TYPES) {
                worker.rest().putConnectorConfig(connector(type),
                        target.config(stream, table(type), type, WINDOW, IDLE_TIMEOUT_MS));
            }
            for (JoinType type : TYPES) {
                worker.rest().awaitRunning(connector(type), 2, Duration.ofSeconds(90));
            }

            sent = stream.run(t -> t < SESSIONS_FOR_MS);
            // Read at once: the last records were sent a moment ago, far less than the idle timeout.
            for (JoinType type : TYPES) {
                atInputEnd.put(type, target.rows(table(type)));
            }

            assertThat(JoinOracle.late(sent, WINDOW.lateness())).as("records late on their partition").isEmpty();
            Map<String, Long> coverage = JoinOracle.coverage(sent, WINDOW);
            System.out.println("WindowJoinIT sent " + sent.size() + " records; " + coverage);
            assertThat(coverage).as("situations the input must contain").containsKeys(
                    "matched", "matched, click sent first", "matched, click earlier in event time",
                    "matched on the lower bound", "matched on the upper bound", "same key, 1 ms below the window",
                    "same key, 1 ms above the window", "same session, other url, in the window",
                    "session query without click", "session click without query");

            for (JoinType type : TYPES) {
                List<Row> expected = JoinOracle.expected(sent, type, WINDOW);
                target.awaitSettled(connector(type), stream, PARTITIONS, Duration.ofSeconds(90));
                WindowJoinTarget.assertSameRows(type + " join table " + table(type), expected, target.rows(table(type)));
                assertThat(target.primaryKey(table(type))).as("primary key of %s", table(type))
                        .containsExactly("__partition", "__left_offset", "__right_offset");
                assertThat(WindowJoinTarget.lateMetric(worker, connector(type))).as("late records of %s", type).isZero();
                assertThat(target.lateLedger(connector(type))).as("late ledger of %s", type).isEmpty();
            }
        }

        for (JoinType type : List.of(JoinType.LEFT, JoinType.FULL)) {
            List<Row> tail = JoinOracle.idleTail(sent, JoinOracle.expected(sent, type, WINDOW), WINDOW);
            Set<String> tailKeys = new HashSet<>(tail.stream().map(Row::key).toList());
            List<String> early = new ArrayList<>();
            atInputEnd.get(type).stream().filter(r -> tailKeys.contains(r.key())).forEach(r -> early.add(r.key()));
            assertThat(tail).as("%s rows only the idle rule can finalize", type).isNotEmpty();
            assertThat(early).as("%s rows written before their window could close", type).isEmpty();
        }
    }

    private static String connector(JoinType type) {
        return "wj-" + type.name().toLowerCase();
    }

    private static String table(JoinType type) {
        return "clicks_" + type.name().toLowerCase();
    }
}
