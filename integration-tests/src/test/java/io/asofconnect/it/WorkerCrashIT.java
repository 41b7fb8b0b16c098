package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * SIGKILL of the worker JVM, three times while events keep flowing: twice at a random moment, once while a flush's
 * transaction is open with its rows written but not committed. Each time a new JVM of the same worker (same group,
 * same directory, so the replica reopens its store) takes over. Every event must be in the target exactly once,
 * joined with the plan valid at its time, and the offsets table must end at the log end of every partition.
 */
@ExtendWith(PrintLogsOnFailure.class)
class WorkerCrashIT {

    private static final String CONNECTOR = "crash-page-views";
    private static final String SINK_APPLICATION = "asof-connect sink " + CONNECTOR;
    private static final int PARTITIONS = 2;
    private static final Duration RANDOM_KILL_WINDOW = Duration.ofSeconds(4);

    private static TestPipeline pipeline;
    private static PostgresServer postgres;
    private static ConnectWorker worker;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("worker-crash");
        postgres = pipeline.postgres();
        worker = pipeline.distributedWorker("worker", "crash");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void repeatedSigkillsOfTheWorkerLoseAndDoubleNothing() throws Exception {
        PageViews scenario = new PageViews(postgres, pipeline.broker(), 5, "crash");
        scenario.createSourceAndTopic(PARTITIONS);
        Map<String, String> config = ConfigTemplates.connectorConfig("distributed/page-views-smt-sink.json",
                scenario.placeholders(pipeline.work().resolve("secrets")));
        config.put("batch.size", "50");
        worker.rest().putConnectorConfig(CONNECTOR, config);
        worker.rest().awaitRunning(CONNECTOR, PARTITIONS, Duration.ofSeconds(90));
        long seed = System.nanoTime();
        Random random = new Random(seed);
        System.out.println("Random kill points from seed " + seed);

        try (JsonEvents producer = new JsonEvents(pipeline.broker())) {
            scenario.produceInterleaved(producer, 4, 10);
            Awaitility.await("the sink to start writing").atMost(Duration.ofSeconds(90))
                    .pollInterval(Duration.ofMillis(100)).until(() -> scenario.targetRowCount() > 0);

            try (BackgroundProducer flowing = new BackgroundProducer(scenario, producer, 50)) {
                killAtARandomMoment(random, scenario);
                restartAndAwaitWriting(scenario);
            }
            scenario.produceInterleaved(producer, 3, 10);

            try (BackgroundProducer flowing = new BackgroundProducer(scenario, producer, 50)) {
                killInsideAnOpenTransaction(scenario);
                restartAndAwaitWriting(scenario);
            }
            scenario.produceInterleaved(producer, 3, 10);

            try (BackgroundProducer flowing = new BackgroundProducer(scenario, producer, 50)) {
                killAtARandomMoment(random, scenario);
                restartAndAwaitWriting(scenario);
            }
            scenario.produceInterleaved(producer, 3, 10);
        }
        scenario.awaitAndVerifyTarget(Duration.ofSeconds(180));
        SinkOffsets offsets = new SinkOffsets(postgres, pipeline.broker(), scenario.targetDb(), CONNECTOR,
                scenario.topic(), PARTITIONS);
        Map<Integer, Long> logEnd = offsets.logEnd();
        assertThat(logEnd.values()).as("events on every partition").allMatch(end -> end > 0);
        assertThat(offsets.inTarget()).as("next offset per partition in the target's offsets table")
                .isEqualTo(logEnd);
    }

    /** The moment is a fault point chosen at random, not a synchronisation: nothing waits on it. */
    private static void killAtARandomMoment(Random random, PageViews scenario) throws Exception {
        Thread.sleep(random.nextInt((int) RANDOM_KILL_WINDOW.toMillis()));
        worker.kill();
        System.out.println("SIGKILLed the worker at a random moment with " + scenario.targetRowCount() + " events"
                + " in the target");
    }

    /**
     * Holds the offsets table locked until a flush has written its rows and waits to move its offsets (the last
     * statement before its commit), kills the worker then, and lets the orphaned statement finish: the server
     * never gets the commit, so the transaction rolls back.
     */
    private static void killInsideAnOpenTransaction(PageViews scenario) throws Exception {
        int backend;
        try (Connection blocker = postgres.connect(scenario.targetDb())) {
            blocker.setAutoCommit(false);
            try (Statement lock = blocker.createStatement()) {
                lock.execute("LOCK TABLE asof_connect_offsets IN EXCLUSIVE MODE");
            }
            backend = Awaitility.await("a flush with uncommitted rows waiting to move its offsets")
                    .atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
                    .until(() -> flushWaitingToMoveOffsets(scenario.targetDb()), Optional::isPresent).orElseThrow();
            worker.kill();
            System.out.println("SIGKILLed the worker while its flush in backend " + backend
                    + " had written rows and not committed, with " + scenario.targetRowCount() + " events in the target");
            blocker.commit();
        }
        Awaitility.await("the killed worker's transaction (backend " + backend + ") to end")
                .atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
                .until(() -> !postgres.hasSession(scenario.targetDb(), backend, false));
    }

    /** The restarted JVM keeps the worker id; a fresh commit, not the stale status, shows it took over. */
    private static void restartAndAwaitWriting(PageViews scenario) throws SQLException {
        long before = scenario.targetRowCount();
        worker.restart();
        worker.rest().awaitRunning(CONNECTOR, PARTITIONS, Duration.ofSeconds(120));
        Awaitility.await("the restarted worker to write").atMost(Duration.ofSeconds(120))
                .pollInterval(Duration.ofMillis(200)).until(() -> scenario.targetRowCount() > before);
    }

    /** A sink session whose transaction has written (it has an xid) and waits for a lock to update an offsets row. */
    private static Optional<Integer> flushWaitingToMoveOffsets(String database) throws SQLException {
        try (Connection c = postgres.connect(database); PreparedStatement ps = c.prepareStatement(
                "SELECT pid FROM pg_stat_activity WHERE datname = ? AND application_name = ? AND state = 'active'"
                        + " AND wait_event_type = 'Lock' AND backend_xid IS NOT NULL AND query ILIKE 'UPDATE%'")) {
            ps.setString(1, database);
            ps.setString(2, SINK_APPLICATION);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(rs.getInt(1)) : Optional.empty();
            }
        }
    }
}
