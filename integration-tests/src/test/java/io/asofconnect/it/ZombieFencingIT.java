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
    /** The test's gate lock: a two-int advisory key, a space apart from the sink's one-key (bigint) DDL locks. */
    private static final int GATE_CLASS = 7031;
    private static final int GATE_OBJECT = 1;
    private static final String GATE_KEY = GATE_CLASS + ", " + GATE_OBJECT;

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

    /**
     * A zombie that really reaches its offsets UPDATE after the take-over. The owner is frozen inside a flush,
     * before the flush touches the offsets row: a test trigger holds the flush's INSERT on a lock the test keeps,
     * so its transaction stays active (no server timeout ends it) and holds no lock the new owner needs. The new
     * owner claims a higher epoch and writes every event; then the lock is let go and the JVM continues, and the
     * next statement of its flush is the offsets UPDATE under the old epoch. Only the epoch condition stops that
     * commit: without it the zombie's rows would be doubled and the offset set back.
     */
    @Test
    void zombieReachingItsOffsetsUpdateAfterTheTakeOverIsRejectedByTheEpochCheck() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 5, "zombieepoch");
        Map<String, String> config = zombieConfig(scenario);
        String db = scenario.targetDb();
        String connector = "zombie-epoch";
        try (ConnectWorker a = worker("worker-a"); ConnectWorker b = worker("worker-b");
             JsonEvents producer = new JsonEvents(broker)) {
            a.rest().putConnectorConfig(connector, config);
            JsonNode status = a.rest().awaitRunning(connector, 1, Duration.ofSeconds(90));
            ConnectWorker owner = ConnectRest.workerIdOf(status.path("tasks").get(0)).equals(a.workerId()) ? a : b;
            ConnectWorker other = owner == a ? b : a;

            int zombie;
            OffsetsRow newOwners;
            try (Connection gate = postgres.connect(db)) {
                try (BackgroundProducer flowing = new BackgroundProducer(scenario, producer, 20)) {
                    Awaitility.await("the first owner to write").atMost(Duration.ofSeconds(60))
                            .until(() -> scenario.targetRowCount() > 100);
                    installZombieTraps(db);
                    execute(gate, "SELECT pg_advisory_lock(" + GATE_KEY + ")");
                    zombie = Awaitility.await("the owner's flush to be held at its INSERT")
                            .atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
                            .until(() -> heldAtTheGate(gate), pid -> pid > 0);
                    // From now on only that session is held: the new owner's INSERTs pass.
                    execute(gate, "INSERT INTO zombie_session VALUES (" + zombie + ")");
                    long firstEpoch = offsetsRow(scenario, connector).epoch();
                    owner.pause();
                    other.rest().awaitRunningAwayFrom(connector, 1, owner.workerId(), Duration.ofSeconds(120));
                    long takenOver = scenario.targetRowCount();
                    Awaitility.await("the new owner to write").atMost(Duration.ofSeconds(90))
                            .until(() -> scenario.targetRowCount() > takenOver + 100);
                    assertThat(offsetsRow(scenario, connector).epoch()).as("the new owner claimed a higher epoch")
                            .isGreaterThan(firstEpoch);
                }
                // The new owner alone has written every event once while the zombie's flush is still held.
                scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(120));
                newOwners = offsetsRow(scenario, connector);
                assertThat(postgres.hasSession(db, zombie, true)).as("the frozen flush's transaction is still open").isTrue();
                execute(gate, "SELECT pg_advisory_unlock(" + GATE_KEY + ")");
            } finally {
                owner.resume();
            }
            Awaitility.await("the zombie's transaction to end").atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(200)).until(() -> !postgres.hasSession(db, zombie, true));
            long rejected = sequenceCount(db, "zombie_offsets_updates_rejected");
            long applied = sequenceCount(db, "zombie_offsets_updates_applied");
            System.out.println("zombie session " + zombie + ": offsets UPDATEs rejected=" + rejected + " applied="
                    + applied + "; offsets row before " + newOwners + ", after " + offsetsRow(scenario, connector));

            scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(30));
            assertThat(offsetsRow(scenario, connector).nextOffset()).as("the new owner's offset stands")
                    .isEqualTo(newOwners.nextOffset());
            assertThat(applied).as("offsets UPDATEs of the zombie's session that changed the row").isZero();
            assertThat(rejected).as("offsets UPDATEs of the zombie's session that matched no row (the epoch check)")
                    .isEqualTo(1);
            Awaitility.await("the zombie to say that it was fenced").atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(500))
                    .until(() -> Files.readString(owner.logFile()).contains("was taken over by another task"));
            a.rest().awaitRunning(connector, 1, Duration.ofSeconds(90));
            assertThat(owner.process().isAlive()).as("a fenced task stops; its worker stays up").isTrue();
        }
    }

    /**
     * Test-only objects in the target: a trigger that holds INSERTs into the target table on the gate lock (every
     * session's until {@code zombie_session} names one, then that one's only), and a trigger that counts that
     * session's UPDATEs of the offsets table by whether they changed a row. Counting uses sequences because
     * they are not transactional: the count of a statement survives the rollback of its transaction.
     */
    private static void installZombieTraps(String database) throws SQLException {
        try (Connection c = postgres.connect(database); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE zombie_session (pid int NOT NULL)");
            s.execute("CREATE SEQUENCE zombie_offsets_updates_rejected");
            s.execute("CREATE SEQUENCE zombie_offsets_updates_applied");
            s.execute("CREATE FUNCTION hold_at_gate() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                    + " IF NOT EXISTS (SELECT 1 FROM zombie_session)"
                    + " OR pg_backend_pid() IN (SELECT pid FROM zombie_session)"
                    + " THEN PERFORM pg_advisory_xact_lock_shared(" + GATE_KEY + "); END IF;"
                    + " RETURN NULL; END $$");
            s.execute("CREATE TRIGGER hold_at_gate BEFORE INSERT ON " + PageViews.TARGET_TABLE
                    + " FOR EACH STATEMENT EXECUTE FUNCTION hold_at_gate()");
            s.execute("CREATE FUNCTION count_zombie_updates() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                    + " IF pg_backend_pid() IN (SELECT pid FROM zombie_session) THEN"
                    + " IF EXISTS (SELECT 1 FROM changed) THEN PERFORM nextval('zombie_offsets_updates_applied');"
                    + " ELSE PERFORM nextval('zombie_offsets_updates_rejected'); END IF; END IF;"
                    + " RETURN NULL; END $$");
            s.execute("CREATE TRIGGER count_zombie_updates AFTER UPDATE ON asof_connect_offsets"
                    + " REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION count_zombie_updates()");
        }
    }

    /** The session waiting for the gate lock, or 0. */
    private static int heldAtTheGate(Connection gate) throws SQLException {
        try (Statement s = gate.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = " + GATE_CLASS
                        + " AND objid = " + GATE_OBJECT + " AND objsubid = 2"
                        + " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")) {
            return rs.next() ? rs.getInt(1) : 0;
        }
    }

    /** How often nextval was called on a fresh sequence (START 1). */
    private static long sequenceCount(String database, String sequence) throws SQLException {
        try (Connection c = postgres.connect(database); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM " + sequence)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    private record OffsetsRow(long epoch, long nextOffset) {
    }

    private static OffsetsRow offsetsRow(PageViews scenario, String connector) throws SQLException {
        try (Connection c = postgres.connect(scenario.targetDb()); PreparedStatement ps = c.prepareStatement(
                "SELECT \"epoch\", \"next_offset\" FROM asof_connect_offsets"
                        + " WHERE \"connector_name\" = ? AND \"topic\" = ? AND \"kafka_partition\" = 0")) {
            ps.setString(1, connector);
            ps.setString(2, scenario.topic());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new OffsetsRow(rs.getLong(1), rs.getLong(2));
            }
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
