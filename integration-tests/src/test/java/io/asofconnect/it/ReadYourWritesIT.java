package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.WorkerJmx;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Read-your-writes: changes are committed, then at once events are produced, and each event must be enriched
 * with a version that takes every change committed before it into account, although the replica has not
 * applied those changes when the events reach the sink. Under {@code replica.valid.from=COLUMN} the events'
 * times lie days in the past, far below the commit-time watermark, so only the rule that the watermark must
 * also pass the time the sink received an event holds them back; under {@code enrich.mode=CURRENT} there is no
 * event time at all. The oracle is the source database: an audit trigger numbers every committed change.
 *
 * <p>Left alone, the replica usually applies a change within tens of milliseconds, often before the events
 * committed after it reach the sink, and the joins would come out right without the rule. The first two tests
 * therefore slow their replica down (a long Debezium poll interval, {@link #SLOW_REPLICA}) and check from the
 * sink's {@code enrich-held-records} gauge, sampled over JMX while the steps run, that records really were held.
 */
@ExtendWith(PrintLogsOnFailure.class)
class ReadYourWritesIT {

    private static final int PARTITIONS = 2;
    private static final int USERS = 50;
    private static final int STEPS = 10;
    private static final int CHANGES_PER_STEP = 30;
    private static final int EVENTS_PER_STEP = 500;
    private static final long DAY_MS = 86_400_000L;
    /**
     * Debezium's poll interval for the replica, passed through {@code replica.debezium.}: the engine hands a
     * partial batch over only after this long, and its streaming loop sleeps this long whenever the slot has
     * nothing new, so changes and the watermark probes behind them reach the store up to seconds after their
     * commit. Events produced right after their changes then reach the sink long before the replica has them.
     */
    private static final long SLOW_POLL_MS = 2_000;
    private static final Map<String, String> SLOW_REPLICA = Map.of("replica.debezium.poll.interval.ms", Long.toString(SLOW_POLL_MS));

    private static TestPipeline pipeline;
    private static ConnectWorker worker;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("read-your-writes");
        worker = pipeline.distributedWorker("worker", "ryw");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void applicationTimeChangesCommittedBeforeTheEventsAreSeenByEveryEvent() throws Exception {
        Scenario s = new Scenario("ryw_column", true);
        s.deploy(SLOW_REPLICA);
        try (JsonEvents producer = new JsonEvents(pipeline.broker())) {
            s.warmUp(producer);
            try (HeldRecords held = s.sampleHeldRecords()) {
                for (int step = 0; step < STEPS; step++) {
                    s.commitApplicationTimeChanges(step);
                    s.produceEventsInThePast(producer, step);
                }
                s.awaitWritten();
                s.awaitAndVerify(held.stop());
            }
        }
    }

    @Test
    void currentModeSeesTheNewestVersionCommittedBeforeEachEvent() throws Exception {
        Scenario s = new Scenario("ryw_current", false);
        Map<String, String> overrides = new HashMap<>(SLOW_REPLICA);
        overrides.put("enrich.mode", "CURRENT");
        s.deploy(overrides);
        try (JsonEvents producer = new JsonEvents(pipeline.broker())) {
            s.warmUp(producer);
            try (HeldRecords held = s.sampleHeldRecords()) {
                for (int step = 0; step < STEPS; step++) {
                    s.commitCurrentChanges();
                    s.produceEventsNow(producer);
                    // CURRENT answers with the newest version when an event is answered: the next step's changes must
                    // not be committed before this step's events are written, or they could rightly see them too.
                    s.awaitWritten();
                }
                s.awaitAndVerify(held.stop());
            }
        }
    }

    @Test
    void afterASigkillEventsWaitForTheChangesCommittedWhileTheWorkerWasDown() throws Exception {
        Scenario s = new Scenario("ryw_crash", true);
        s.deploy(Map.of());
        try (JsonEvents producer = new JsonEvents(pipeline.broker())) {
            s.warmUp(producer);
            for (int step = 0; step < STEPS; step++) {
                if (step == 3 || step == 7) {
                    worker.kill();
                    System.out.println("SIGKILLed the worker before step " + step + " with " + s.written() + " events written");
                    // Committed and produced while nothing runs: after the restart the replica reopens its file at
                    // its old watermark, and these events reach the sink before their changes reach the replica.
                    s.commitApplicationTimeChanges(step);
                    s.produceEventsInThePast(producer, step);
                    worker.restart();
                    worker.rest().awaitRunning(s.connector, PARTITIONS, Duration.ofSeconds(120));
                    continue;
                }
                s.commitApplicationTimeChanges(step);
                s.produceEventsInThePast(producer, step);
            }
        }
        s.awaitAndVerify();
    }

    /**
     * One connector over its own source table, topic and target. The source is PageViews' {@code users} table
     * with an application-time column {@code valid_from} and an audit trigger that numbers each committed change
     * ({@code users_audit.seq}, in commit order since each change commits alone).
     */
    private static final class Scenario {
        private final PageViews base;
        private final String connector;
        private final boolean applicationTime;
        private final long origin = (System.currentTimeMillis() / 1000 - 30 * 86_400) * 1000;
        private final Random random = new Random();
        /** Per event id: user, event time, and the highest audit seq committed before it was produced. */
        private final Map<Long, long[]> events = new HashMap<>();
        private final ObjectNode schema = JsonEvents.structSchema("page_view",
                new java.util.LinkedHashMap<>(Map.of("event_id", "int64", "user_id", "int32")));
        private long nextEventId = 1;

        Scenario(String name, boolean applicationTime) throws SQLException {
            this.base = new PageViews(pipeline.postgres(), pipeline.broker(), USERS, name);
            this.connector = name + "-sink";
            this.applicationTime = applicationTime;
            base.createSourceAndTopic(PARTITIONS);
            try (Connection c = source(); Statement st = c.createStatement()) {
                st.execute("ALTER TABLE users ADD COLUMN valid_from timestamptz NOT NULL DEFAULT '2000-01-01T00:00:00Z'");
                st.execute("CREATE TABLE users_audit (seq bigserial PRIMARY KEY, id int NOT NULL, plan text NOT NULL,"
                        + " valid_from timestamptz NOT NULL)");
                // The rows as they are before the replica starts: valid for every time (the snapshot's rows).
                st.execute("INSERT INTO users_audit (id, plan, valid_from) SELECT id, plan, '-infinity' FROM users ORDER BY id");
                st.execute("CREATE FUNCTION audit_users() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                        + " INSERT INTO users_audit (id, plan, valid_from) VALUES (NEW.id, NEW.plan, NEW.valid_from);"
                        + " RETURN NEW; END $$");
                st.execute("CREATE TRIGGER audit AFTER UPDATE ON users FOR EACH ROW EXECUTE FUNCTION audit_users()");
            }
        }

        void deploy(Map<String, String> overrides) throws Exception {
            Map<String, String> config = ConfigTemplates.connectorConfig("distributed/page-views-enriched-sink.json",
                    base.placeholders(pipeline.work().resolve("secrets-" + connector)));
            config.put("replica.name", connector);
            config.put("replica.slot.name", connector.replace('-', '_') + "_slot");
            if (applicationTime) {
                config.put("replica.valid.from", "COLUMN");
                config.put("replica.valid.from.column", "valid_from");
            }
            config.put("enrich.lateness.wait.ms", "60000");
            config.putAll(overrides);
            worker.rest().putConnectorConfig(connector, config);
            worker.rest().awaitRunning(connector, PARTITIONS, Duration.ofSeconds(120));
        }

        private Connection source() throws SQLException {
            return pipeline.postgres().connect(base.sourceDb());
        }

        /**
         * Step {@code step}'s changes are valid from times inside day {@code step} of the past month, in whole
         * seconds; events of the step fall in days 0..step, so no later step's change is valid at an earlier
         * step's event and the expected version is exact.
         */
        void commitApplicationTimeChanges(int step) throws SQLException {
            try (Connection c = source(); PreparedStatement ps = c.prepareStatement(
                    "UPDATE users SET plan = ?, valid_from = to_timestamp(?::double precision / 1000) WHERE id = ?")) {
                for (int i = 0; i < CHANGES_PER_STEP; i++) {
                    ps.setString(1, "s" + step + "c" + i);
                    ps.setLong(2, origin + step * DAY_MS + random.nextInt(86_400) * 1000L);
                    ps.setInt(3, 1 + random.nextInt(USERS));
                    ps.executeUpdate();
                }
            }
        }

        void commitCurrentChanges() throws SQLException {
            try (Connection c = source(); PreparedStatement ps = c.prepareStatement("UPDATE users SET plan = ? WHERE id = ?")) {
                for (int i = 0; i < CHANGES_PER_STEP; i++) {
                    ps.setString(1, "p" + nextEventId + "c" + i);
                    ps.setInt(2, 1 + random.nextInt(USERS));
                    ps.executeUpdate();
                }
            }
        }

        /** Event times in days 0..step, half a second off any whole second, so none equals a valid-from. */
        void produceEventsInThePast(JsonEvents producer, int step) throws SQLException {
            long committed = lastSeq();
            for (int i = 0; i < EVENTS_PER_STEP; i++) {
                send(producer, origin + random.nextInt(step + 1) * DAY_MS + random.nextInt(86_400) * 1000L + 500, committed);
            }
            producer.flush();
        }

        /**
         * One event, written before any change: the replica's snapshot is then through, so its rows (valid for
         * every time) hold the plans from before the first step, as the oracle's '-infinity' rows say.
         */
        void warmUp(JsonEvents producer) throws SQLException {
            produceEventsNow(producer, 1);
            awaitWritten();
        }

        void produceEventsNow(JsonEvents producer) throws SQLException {
            produceEventsNow(producer, EVENTS_PER_STEP);
        }

        private void produceEventsNow(JsonEvents producer, int count) throws SQLException {
            long committed = lastSeq();
            for (int i = 0; i < count; i++) {
                send(producer, System.currentTimeMillis(), committed);
            }
            producer.flush();
        }

        private void send(JsonEvents producer, long eventTime, long committedSeq) {
            long id = nextEventId++;
            int user = 1 + random.nextInt(USERS);
            ObjectNode payload = JsonEvents.payload();
            payload.put("event_id", id);
            payload.put("user_id", user);
            producer.sendAsync(base.topic(), null, eventTime, JsonEvents.int64Key(user), JsonEvents.envelope(schema, payload));
            events.put(id, new long[] {user, eventTime, committedSeq});
        }

        private long lastSeq() throws SQLException {
            try (Connection c = source(); Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT max(seq) FROM users_audit")) {
                rs.next();
                return rs.getLong(1);
            }
        }

        long written() throws SQLException {
            return base.targetRowCount();
        }

        void awaitWritten() {
            Awaitility.await(events.size() + " events written").atMost(Duration.ofSeconds(180))
                    .pollInterval(Duration.ofMillis(200)).until(() -> written() >= events.size());
        }

        /** Samples the sink's held-records gauge of this connector's tasks from now until {@link HeldRecords#stop}. */
        HeldRecords sampleHeldRecords() {
            return new HeldRecords(worker, connector);
        }

        /**
         * {@link #awaitAndVerify()}, then that records were held while the steps ran (the replica really was behind
         * the events, so that the joins above depended on the rule), that each was released by the replica catching
         * up rather than by {@code enrich.on.late}, and that none is left waiting.
         */
        void awaitAndVerify(HeldRecords.Seen held) throws SQLException {
            double late;
            double heldNow;
            try (WorkerJmx jmx = WorkerJmx.attach(worker.process())) {
                Map<String, Double> summed = jmx.pluginMetrics(connector);
                late = summed.get("enrich-late-records-total");
                heldNow = summed.get("enrich-held-records");
            }
            System.out.printf("%s: at most %.0f records held at once, held without a break for up to %d ms"
                    + " (%d samples); %.0f late, %.0f held now%n", connector, held.most(), held.longestMs(),
                    held.samples(), late, heldNow);
            awaitAndVerify();
            assertThat(held.most()).as("records held for the replica's receipt watermark at any one time while the"
                    + " steps ran (enrich-held-records, summed over the tasks)").isPositive();
            assertThat(held.longestMs()).as("the longest time records were held without a break: a replica behind"
                    + " by Debezium's poll interval of %d ms keeps them waiting about that long", SLOW_POLL_MS)
                    .isGreaterThanOrEqualTo(SLOW_POLL_MS / 4);
            assertThat(late).as("records the late policy decided instead of the replica catching up").isZero();
            assertThat(heldNow).as("records still held once every event is written").isZero();
        }

        /** Every event once, with the plan the audit log says: the newest committed change valid at its time. */
        void awaitAndVerify() throws SQLException {
            awaitWritten();
            List<long[]> audit = new ArrayList<>();
            try (Connection c = source(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
                    "SELECT seq, id, CASE WHEN valid_from = '-infinity' THEN NULL"
                            + " ELSE (extract(epoch FROM valid_from) * 1000)::bigint END FROM users_audit ORDER BY seq")) {
                while (rs.next()) {
                    long validFrom = rs.getLong(3);
                    audit.add(new long[] {rs.getLong(1), rs.getInt(2), rs.wasNull() ? Long.MIN_VALUE : validFrom});
                }
            }
            Map<Long, String> plans = new HashMap<>();
            try (Connection c = source(); Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT seq, plan FROM users_audit")) {
                while (rs.next()) {
                    plans.put(rs.getLong(1), rs.getString(2));
                }
            }
            Map<Long, Integer> copies = new HashMap<>();
            Map<Long, String> got = new HashMap<>();
            try (Connection c = pipeline.postgres().connect(base.targetDb()); Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT event_id, users_plan FROM " + PageViews.TARGET_TABLE)) {
                while (rs.next()) {
                    copies.merge(rs.getLong(1), 1, Integer::sum);
                    got.put(rs.getLong(1), rs.getString(2));
                }
            }
            assertThat(copies.entrySet()).as("events written more than once").filteredOn(e -> e.getValue() > 1).isEmpty();
            assertThat(copies.keySet()).as("event ids in the target").containsExactlyInAnyOrderElementsOf(events.keySet());
            List<String> wrong = new ArrayList<>();
            events.forEach((id, e) -> {
                String expected = plans.get(expectedSeq(audit, (int) e[0], e[1], e[2]));
                if (!expected.equals(got.get(id))) {
                    wrong.add("event " + id + " (user " + e[0] + ", time " + e[1] + "): expected " + expected + ", got " + got.get(id));
                }
            });
            assertThat(wrong).as("of %d events, %d joined with a version other than the oracle's", events.size(), wrong.size())
                    .isEmpty();
        }

        /**
         * Application time: the change of {@code user} with the greatest valid-from at or before the event time,
         * the later committed on a tie; current: the newest change committed before the event was produced.
         */
        private long expectedSeq(List<long[]> audit, int user, long eventTime, long committedSeq) {
            long best = -1;
            long bestFrom = Long.MIN_VALUE;
            for (long[] a : audit) {
                if (a[1] != user || a[0] > committedSeq) {
                    continue;
                }
                if (!applicationTime) {
                    best = a[0];
                } else if (a[2] <= eventTime && (best < 0 || a[2] >= bestFrom)) {
                    best = a[0];
                    bestFrom = a[2];
                }
            }
            return best;
        }
    }

    /**
     * Reads the sink's {@code enrich-held-records} gauge of one connector's tasks over JMX, every few milliseconds,
     * on a thread of its own while the test thread commits and produces. The gauge says how many records wait for
     * the replica now, so sampling it from after the warm-up on shows that records of the steps were held (the
     * hold-time distribution cannot: its window also covers the warm-up event, held through the replica's start).
     */
    private static final class HeldRecords implements AutoCloseable {
        record Seen(double most, long longestMs, int samples) {
        }

        private final WorkerJmx jmx;
        private final String connector;
        private final Thread thread;
        private volatile boolean stopping;
        private volatile RuntimeException failure;
        private double most;
        private long longestNanos;
        private int samples;

        HeldRecords(ConnectWorker worker, String connector) {
            this.jmx = WorkerJmx.attach(worker.process());
            this.connector = connector;
            this.thread = new Thread(this::sample, "held-records-" + connector);
            thread.setDaemon(true);
            thread.start();
        }

        private void sample() {
            boolean holding = false;
            long heldSince = 0;
            try {
                while (!stopping) {
                    double held = 0;
                    for (int task = 0; task < PARTITIONS; task++) {
                        held += jmx.pluginMetric(connector, task, "enrich-held-records");
                    }
                    long now = System.nanoTime();
                    samples++;
                    most = Math.max(most, held);
                    if (held > 0 && !holding) {
                        heldSince = now;
                    }
                    holding = held > 0;
                    if (holding) {
                        longestNanos = Math.max(longestNanos, now - heldSince);
                    }
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
                }
            } catch (RuntimeException e) {
                failure = e;
            }
        }

        /** Stops sampling; what it saw. */
        Seen stop() throws InterruptedException {
            stopping = true;
            thread.join();
            if (failure != null) {
                throw new IllegalStateException("sampling enrich-held-records of " + connector + " failed", failure);
            }
            return new Seen(most, TimeUnit.NANOSECONDS.toMillis(longestNanos), samples);
        }

        @Override
        public void close() throws InterruptedException {
            stopping = true;
            thread.join();
            jmx.close();
        }
    }
}
