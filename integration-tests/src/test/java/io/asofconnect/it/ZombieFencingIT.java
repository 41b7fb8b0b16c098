package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;

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
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A zombie: the worker running the only task is frozen (SIGSTOP) past the session timeouts, its partition
 * moves to the other worker, which claims a higher epoch and writes; then the frozen JVM continues (SIGCONT).
 * The new owner's rows stand and nothing is doubled; a zombie frozen inside a flush must have its commit
 * rejected by the epoch check.
 */
@ExtendWith(PrintLogsOnFailure.class)
class ZombieFencingIT {

    private static final String CONNECTOR = "zombie-page-views";

    private static TestPipeline pipeline;
    private static PostgresServer postgres;
    private static KafkaBroker broker;
    private static Path work;
    private static Path plugins;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("zombie");
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
    void zombieFrozenBetweenFlushesLosesItsPartitionAndNothingIsDoubled() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 5, "zombie");
        Map<String, String> config = zombieConfig(scenario);
        try (ConnectWorker a = worker("worker-a"); ConnectWorker b = worker("worker-b");
             JsonEvents producer = new JsonEvents(broker)) {
            a.rest().putConnectorConfig(CONNECTOR, config);
            JsonNode status = a.rest().awaitRunning(CONNECTOR, 1, Duration.ofSeconds(90));
            ConnectWorker owner = ConnectRest.workerIdOf(status.path("tasks").get(0)).equals(a.workerId()) ? a : b;
            ConnectWorker other = owner == a ? b : a;

            try (BackgroundProducer flowing = new BackgroundProducer(scenario, producer, 20)) {
                Awaitility.await("the first owner to write").atMost(Duration.ofSeconds(60))
                        .until(() -> scenario.targetRowCount() > 100);
                long firstEpoch = epochOf(scenario, CONNECTOR);
                owner.pause();
                try {
                    other.rest().awaitRunningAwayFrom(CONNECTOR, 1, owner.workerId(), Duration.ofSeconds(120));
                    long takenOver = scenario.targetRowCount();
                    Awaitility.await("the new owner to write").atMost(Duration.ofSeconds(90))
                            .until(() -> scenario.targetRowCount() > takenOver + 100);
                    assertThat(epochOf(scenario, CONNECTOR)).as("the new owner claimed a higher epoch")
                            .isGreaterThan(firstEpoch);
                } finally {
                    owner.resume();
                }
            }
            other.rest().awaitRunning(CONNECTOR, 1, Duration.ofSeconds(90));
            scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(120));
            assertThat(owner.process().isAlive()).as("the resumed worker stays up").isTrue();
        }
    }

    /**
     * Frozen while its flush holds the offsets row: the new owner's claim waits for that row lock until
     * Postgres ends the idle session (the sink's idle_in_transaction_session_timeout, 90 s), then takes over;
     * the resumed zombie's commit fails and the epoch check tells it that it was fenced.
     */
    @Test
    void zombieFrozenInsideAFlushIsFencedAndTheNewOwnersRowsStand() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 5, "zombieflush");
        Map<String, String> config = zombieConfig(scenario);

        try (ConnectWorker a = worker("worker-a"); ConnectWorker b = worker("worker-b");
             JsonEvents producer = new JsonEvents(broker)) {
            a.rest().putConnectorConfig("zombie-flush", config);
            JsonNode status = a.rest().awaitRunning("zombie-flush", 1, Duration.ofSeconds(90));
            String ownerId = ConnectRest.workerIdOf(status.path("tasks").get(0));
            ConnectWorker owner = ownerId.equals(a.workerId()) ? a : b;
            ConnectWorker other = owner == a ? b : a;

            try (BackgroundProducer flowing = new BackgroundProducer(scenario, producer, 20)) {
                Awaitility.await("the first owner to write").atMost(Duration.ofSeconds(60))
                        .until(() -> scenario.targetRowCount() > 100);
                // Freeze the owner inside a flush: hold a lock on the offsets table until the flush's first
                // statement (moving its offsets) waits for it, stop the JVM, then let that statement finish on
                // the server. The zombie's transaction, its offsets row locked, is idle until Postgres ends
                // the session (the sink sets idle_in_transaction_session_timeout); then the new owner claims.
                try (Connection blocker = postgres.connect(scenario.targetDb())) {
                    blocker.setAutoCommit(false);
                    try (Statement lock = blocker.createStatement()) {
                        lock.execute("LOCK TABLE asof_connect_offsets IN EXCLUSIVE MODE");
                    }
                    Awaitility.await("the owner's flush to wait for the offsets table").atMost(Duration.ofSeconds(60))
                            .pollInterval(Duration.ofMillis(200)).until(() -> waitingOnLock(scenario.targetDb()));
                    owner.pause();
                    blocker.commit();
                }
                printSessions(scenario.targetDb());
                try {
                    other.rest().awaitRunningAwayFrom("zombie-flush", 1, owner.workerId(), Duration.ofSeconds(120));
                    long takenOver = scenario.targetRowCount();
                    Awaitility.await("the new owner to write").atMost(Duration.ofSeconds(240))
                            .pollInterval(Duration.ofSeconds(1))
                            .until(() -> scenario.targetRowCount() > takenOver + 100);
                } finally {
                    owner.resume();
                }
                Awaitility.await("the resumed zombie's commit to be rejected by the epoch check")
                        .atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500))
                        .until(() -> Files.readString(owner.logFile()).contains("was taken over by another task"));
            }
            other.rest().awaitRunning("zombie-flush", 1, Duration.ofSeconds(90));
            scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(120));
            assertThat(owner.process().isAlive()).as("a fenced task stops; its worker stays up").isTrue();
        }
    }

    private static Map<String, String> zombieConfig(PageViews scenario) throws Exception {
        scenario.createSourceAndTopic(1);
        Map<String, String> config = PageViews.withoutEnrichment(ConfigTemplates.connectorConfig(
                "distributed/page-views-smt-sink.json", scenario.placeholders(work.resolve("secrets"))));
        config.put("tasks.max", "1");
        config.put("batch.size", "20");
        return config;
    }

    private static long epochOf(PageViews scenario, String connector) throws SQLException {
        try (Connection c = postgres.connect(scenario.targetDb()); PreparedStatement ps = c.prepareStatement(
                "SELECT max(\"epoch\") FROM asof_connect_offsets WHERE \"connector_name\" = ? AND \"topic\" = ?")) {
            ps.setString(1, connector);
            ps.setString(2, scenario.topic());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /** What the frozen owner's session looks like to Postgres: decides whether any server timeout can end it. */
    private static void printSessions(String database) throws SQLException {
        try (Connection c = postgres.connect(database); PreparedStatement ps = c.prepareStatement(
                "SELECT pid, state, wait_event_type, wait_event, left(query, 60) FROM pg_stat_activity"
                        + " WHERE datname = ? AND pid <> pg_backend_pid()")) {
            ps.setString(1, database);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    System.out.println("session " + rs.getInt(1) + " state=" + rs.getString(2) + " wait="
                            + rs.getString(3) + "/" + rs.getString(4) + " query=" + rs.getString(5));
                }
            }
        }
    }

    private static boolean waitingOnLock(String database) throws SQLException {
        try (Connection c = postgres.connect(database); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = ? AND wait_event_type = 'Lock'")) {
            ps.setString(1, database);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1) > 0;
            }
        }
    }

    private static ConnectWorker worker(String name) {
        return ConnectWorker.distributed(name, work,
                ConnectWorker.distributedProperties(broker, "zombie", plugins, FreePorts.pick()));
    }
}
