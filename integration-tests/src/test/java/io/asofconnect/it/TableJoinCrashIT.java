package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.asofconnect.it.Timeline.Write;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.Waits;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * SIGKILL of the worker JVM that runs the timeline view (exactly-once source) and its sink, while the workload keeps
 * changing posts and follows and the target table is being written; a new JVM of the worker takes over. At the end
 * the table must equal the SQL join on the source, and the write log of the target ({@link Timeline#createTargetTable})
 * must show, per view key, only changes the view committed to its topic (read committed), each applied at most once
 * and in their order: no change applied twice, none from an aborted transaction of the killed task.
 */
@ExtendWith(PrintLogsOnFailure.class)
class TableJoinCrashIT {

    private static final String VIEW = "timeline-view";
    private static final String SINK = "timeline-sink";
    private static final String TABLE = "timeline";
    private static final int PARTITIONS = 2;
    private static final Duration PAUSE_BETWEEN_TRANSACTIONS = Duration.ofMillis(20);

    private static TestPipeline pipeline;
    private static ConnectWorker crashing;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("table-join-crash");
        crashing = pipeline.distributedWorker("crashing", "tj-crash", Timeline.workerProperties());
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void aSigkillMidStreamLeavesTheSqlJoinWithNoChangeAppliedTwice() throws Exception {
        long seed = System.nanoTime();
        System.out.println("TableJoinCrashIT workload from seed " + seed);
        Timeline timeline = new Timeline(pipeline.postgres(), pipeline.broker(), "tjc", 12, seed);
        timeline.createSource(60, 60);
        timeline.createTargetTable(TABLE);
        pipeline.broker().createTopic(TABLE, PARTITIONS);
        Map<String, String> values = timeline.placeholders(pipeline.work().resolve("secrets"), pipeline.work().resolve("replicas"));
        Map<String, String> view = timeline.viewConfig(values, TABLE, "UPSERT", TABLE);
        // Small polls: each Kafka transaction ends inside one change's fan-out more often than not, so the restart
        // resumes in the middle of a change.
        view.put("view.batch.size", "50");
        crashing.rest().putConnectorConfig(VIEW, view);
        crashing.rest().putConnectorConfig(SINK, timeline.sinkConfig(values, TABLE, TABLE, "UPSERT"));
        crashing.rest().awaitRunning(VIEW, 1, Duration.ofSeconds(90));
        crashing.rest().awaitRunning(SINK, 1, Duration.ofSeconds(90));
        timeline.awaitQuiescent(TABLE, Duration.ofSeconds(2), Duration.ofSeconds(90));

        AtomicBoolean stopWorkload = new AtomicBoolean();
        CompletableFuture<Long> workload = new CompletableFuture<>();
        Thread producing = new Thread(() -> {
            try {
                workload.complete(timeline.runUntil(stopWorkload, PAUSE_BETWEEN_TRANSACTIONS));
            } catch (Throwable t) {
                workload.completeExceptionally(t);
            }
        }, "timeline-workload");
        producing.setDaemon(true);
        producing.start();
        long writesAtKill;
        long transactionsAtKill;
        try {
            // Two rounds of growth in a row: the view is being written steadily, not just starting.
            awaitWrites(timeline, timeline.writes(TABLE), "the sink to apply view changes before the kill");
            awaitWrites(timeline, timeline.writes(TABLE), "the applied view changes to grow before the kill");
            assertThat(workload).as("the workload still running at the kill").isNotDone();
            crashing.kill();
            writesAtKill = timeline.writes(TABLE);
            transactionsAtKill = timeline.transactions();
            List<Timeline.Row> oracleAtKill = timeline.oracle();
            List<Timeline.Row> targetAtKill = timeline.target(TABLE);
            System.out.println("SIGKILLed the worker with " + writesAtKill + " writes applied after "
                    + transactionsAtKill + " source transactions; the target then differed from the SQL join by "
                    + Timeline.difference(oracleAtKill, targetAtKill));
            assertThat(targetAtKill).as("the view behind the source at the kill: it landed mid-stream").isNotEqualTo(oracleAtKill);
            crashing.restart();
            crashing.rest().awaitRunning(VIEW, 1, Duration.ofSeconds(120));
            crashing.rest().awaitRunning(SINK, 1, Duration.ofSeconds(120));
            awaitWrites(timeline, writesAtKill, "the restarted worker to apply view changes");
            // Some more changes on the new worker before the workload stops.
            Waits.pause(Duration.ofSeconds(3));
        } finally {
            stopWorkload.set(true);
        }
        long transactions = workload.get(1, TimeUnit.MINUTES);
        assertThat(transactions).as("source transactions committed after the kill").isGreaterThan(transactionsAtKill);
        timeline.awaitQuiescent(TABLE, Duration.ofSeconds(3), Duration.ofSeconds(90));
        System.out.println("TableJoinCrashIT " + timeline.coverage() + "; " + timeline.oracle().size() + " view rows");

        Map<String, List<Write>> applied = timeline.appliedPerKey(TABLE);
        Map<String, List<Write>> produced = timeline.producedPerKey(TABLE, Duration.ofSeconds(60));
        Timeline.assertNoChangeProducedTwice(produced);
        long[] totals = Timeline.assertAppliedAtMostOnce(applied, produced);
        long keysWithEveryChange = applied.entrySet().stream()
                .filter(e -> e.getValue().size() == produced.getOrDefault(e.getKey(), List.of()).size()).count();
        System.out.println("TableJoinCrashIT applied " + totals[0] + " writes of " + totals[1] + " view changes produced"
                + " (read committed) over " + produced.size() + " view keys; " + keysWithEveryChange + " of " + applied.size()
                + " written keys had every change applied (the others had changes superseded within one flush)");
        assertThat(totals[0]).as("writes applied after the kill").isGreaterThan(writesAtKill);
    }

    private static void awaitWrites(Timeline timeline, long from, String what) {
        Awaitility.await(what).atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(100))
                .until(() -> writes(timeline) > from);
    }

    private static long writes(Timeline timeline) throws SQLException {
        return timeline.writes(TABLE);
    }
}
