package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.asofconnect.it.ClickStream.Sent;
import io.asofconnect.it.JoinOracle.JoinType;
import io.asofconnect.it.JoinOracle.Row;
import io.asofconnect.it.JoinOracle.Window;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * SIGKILL of the worker JVM that runs a FULL window join, twice while queries and clicks keep streaming, each time
 * right after its committed output grew; a new JVM of the same worker takes over and rewinds to the lowest held
 * offset. At the end the table must be the nested-loop oracle's rows, each key once, and equal to the table of the
 * same join run in the same test by another worker (its own Connect group) that nobody kills.
 */
@ExtendWith(PrintLogsOnFailure.class)
class WindowJoinCrashIT {

    private static final int PARTITIONS = 3;
    private static final Window WINDOW = new Window(1_000, 10_000, 2_000);
    private static final long IDLE_TIMEOUT_MS = 3_000;
    private static final String CRASHED = "wj-crashed";
    private static final String STEADY = "wj-steady";
    private static final String CRASHED_TABLE = "clicks_crashed";
    private static final String STEADY_TABLE = "clicks_steady";

    private static TestPipeline pipeline;
    private static ConnectWorker crashing;
    private static ConnectWorker steady;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("window-join-crash");
        crashing = pipeline.distributedWorker("crashing", "wj-crash");
        steady = pipeline.distributedWorker("steady", "wj-steady");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void twoSigkillsMidStreamLeaveTheTableOfAnUncrashedRunEveryKeyOnce() throws Exception {
        WindowJoinTarget target = new WindowJoinTarget(pipeline.postgres(), pipeline.broker(), "joins",
                pipeline.work().resolve("join-state"));
        long seed = System.nanoTime();
        System.out.println("WindowJoinCrashIT input from seed " + seed);
        List<Sent> sent;
        List<Long> rowsAtKills = new ArrayList<>();
        try (JsonEvents producer = new JsonEvents(pipeline.broker())) {
            ClickStream stream = new ClickStream(producer, "wjc", PARTITIONS, WINDOW.before(), WINDOW.after(), seed);
            stream.createTopics(pipeline.broker());
            crashing.rest().putConnectorConfig(CRASHED,
                    target.config(stream, CRASHED_TABLE, JoinType.FULL, WINDOW, IDLE_TIMEOUT_MS));
            Map<String, String> steadyConfig = target.config(stream, STEADY_TABLE, JoinType.FULL, WINDOW,
                    IDLE_TIMEOUT_MS);
            // Another machine in production: its own state directory.
            steadyConfig.put("join.state.path", pipeline.work().resolve("join-state-steady").toString());
            steady.rest().putConnectorConfig(STEADY, steadyConfig);
            crashing.rest().awaitRunning(CRASHED, 2, Duration.ofSeconds(90));
            steady.rest().awaitRunning(STEADY, 2, Duration.ofSeconds(90));

            AtomicBoolean stopSessions = new AtomicBoolean();
            CompletableFuture<List<Sent>> streaming = new CompletableFuture<>();
            Thread producing = new Thread(() -> {
                try {
                    streaming.complete(stream.run(t -> !stopSessions.get()));
                } catch (Throwable t) {
                    streaming.completeExceptionally(t);
                }
            }, "click-stream");
            producing.setDaemon(true);
            producing.start();
            try {
                for (int kill = 1; kill <= 2; kill++) {
                    // Two commits with rows in a row: the join is writing steadily, not just starting.
                    awaitGrowth(target, target.rowCount(CRASHED_TABLE), "the join to commit rows before kill " + kill);
                    awaitGrowth(target, target.rowCount(CRASHED_TABLE), "the join's committed rows to grow before kill "
                            + kill);
                    assertThat(stream.ended()).as("input still flowing at kill %s", kill).isFalse();
                    crashing.kill();
                    long atKill = target.rowCount(CRASHED_TABLE);
                    rowsAtKills.add(atKill);
                    long toReplay = heldSpan(target, stream.leftTopic()) + heldSpan(target, stream.rightTopic());
                    System.out.println("SIGKILLed the worker (kill " + kill + ") with " + atKill + " rows committed, "
                            + toReplay + " committed offsets still held in windows, " + stream.sentSoFar()
                            + " records sent");
                    assertThat(toReplay).as("offsets below the committed ones still held at kill %s: the new task"
                            + " must replay them", kill).isPositive();
                    crashing.restart();
                    crashing.rest().awaitRunning(CRASHED, 2, Duration.ofSeconds(120));
                    awaitGrowth(target, atKill, "the restarted worker to write after kill " + kill);
                }
            } finally {
                stopSessions.set(true);
            }
            sent = streaming.get(3, TimeUnit.MINUTES);

            assertThat(JoinOracle.late(sent, WINDOW.lateness())).as("records late on their partition").isEmpty();
            List<Row> expected = JoinOracle.expected(sent, JoinType.FULL, WINDOW);
            System.out.println("WindowJoinCrashIT sent " + sent.size() + " records; " + expected.size()
                    + " rows expected; " + JoinOracle.coverage(sent, WINDOW));
            target.awaitSettled(STEADY, stream, PARTITIONS, Duration.ofSeconds(90));
            target.awaitSettled(CRASHED, stream, PARTITIONS, Duration.ofSeconds(90));

            List<Row> crashedRows = target.rows(CRASHED_TABLE);
            List<Row> steadyRows = target.rows(STEADY_TABLE);
            WindowJoinTarget.assertSameRows("uncrashed FULL join", expected, steadyRows);
            WindowJoinTarget.assertSameRows("FULL join killed twice", expected, crashedRows);
            WindowJoinTarget.assertSameRows("FULL join killed twice, against the uncrashed one", steadyRows,
                    crashedRows);
            assertThat(rowsAtKills).as("rows committed at each kill, fewer than at the end: the kills were mid-stream")
                    .hasSize(2).allMatch(atKill -> atKill > 0 && atKill < crashedRows.size());
            assertThat(WindowJoinTarget.lateMetric(crashing, CRASHED)).as("late records after the restarts").isZero();
        }
    }

    /** Committed offsets of {@code topic} still held in windows: next offset less held offset, summed. */
    private static long heldSpan(WindowJoinTarget target, String topic) throws SQLException {
        Map<Integer, Long> next = target.nextOffsets(CRASHED, topic, PARTITIONS);
        Map<Integer, Long> held = target.heldFrom(CRASHED, topic);
        return next.entrySet().stream().mapToLong(e -> e.getValue() - held.getOrDefault(e.getKey(), e.getValue())).sum();
    }

    private static void awaitGrowth(WindowJoinTarget target, long from, String what) {
        Awaitility.await(what).atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(100))
                .until(() -> rowCount(target) > from);
    }

    private static long rowCount(WindowJoinTarget target) throws SQLException {
        return target.rowCount(CRASHED_TABLE);
    }
}
