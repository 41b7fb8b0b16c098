package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.Waits;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.awaitility.Awaitility;

/**
 * The page-view scenario shared by the end-to-end tests: a {@code users(id, plan)} dimension table in a
 * source database, page views keyed by user on a topic, plan changes committed between the events, and an
 * oracle that knows from Postgres' own commit timestamps which plan was valid at each event's time.
 */
public final class PageViews {

    static final String TARGET_TABLE = "page_views_enriched";
    static final String[] PLANS = {"free", "pro", "team", "enterprise"};

    /** How far the Kafka record timestamp lags the event time when the event time is a value field. */
    static final long RECORD_TIMESTAMP_LAG_MS = 3_600_000;

    private final PostgresServer postgres;
    private final KafkaBroker broker;
    private final int users;
    private final String topic;
    private final String sourceDb;
    private final String targetDb;
    /** Per user, the plan history: commit time (epoch micros) -> plan; the snapshot's rows at Long.MIN_VALUE. */
    private final Map<Integer, TreeMap<Long, String>> history = new HashMap<>();
    /** Per event id, the plan the event must be joined with. */
    private final Map<Long, String> expected = new LinkedHashMap<>();
    private final Map<Long, RecordMetadata> produced = new LinkedHashMap<>();
    private final List<Change> changes = new ArrayList<>();
    private final Map<Long, Long> eventTimes = new HashMap<>();
    private final Map<Long, Integer> eventUsers = new HashMap<>();
    private long nextEventId = 1;
    /** Set once the replica's slot is known to stream every later change: see {@link #awaitReplicaSlots}. */
    private boolean slotsReady;
    private String timeField;
    private ObjectNode valueSchema = schema(null);

    /** {@code name} keeps scenarios of one test class apart: it names the topic and both databases. */
    public PageViews(PostgresServer postgres, KafkaBroker broker, int users, String name) {
        this.postgres = postgres;
        this.broker = broker;
        this.users = users;
        this.topic = name + "_page_views";
        this.sourceDb = name + "_shop";
        this.targetDb = name + "_warehouse";
    }

    public String topic() {
        return topic;
    }

    /**
     * Events carry their event time as an ISO-8601 string in {@code field}, and their Kafka record timestamp
     * lags it by {@link #RECORD_TIMESTAMP_LAG_MS}: a sink that joined on the record timestamp instead of the field
     * would see every event before every plan change, and the oracle would catch it.
     */
    public PageViews withEventTimeField(String field) {
        this.timeField = field;
        this.valueSchema = schema(field);
        return this;
    }

    /**
     * A page view of {@code user} whose event-time field holds {@code rawTime} as it is, e.g. an unparsable string;
     * it is not expected in the target. Requires {@link #withEventTimeField}.
     */
    public RecordMetadata sendWithRawEventTime(JsonEvents producer, int partition, long eventId, int user,
                                               String rawTime) {
        if (timeField == null) {
            throw new IllegalStateException("sendWithRawEventTime needs withEventTimeField first");
        }
        ObjectNode payload = JsonEvents.payload();
        payload.put("event_id", eventId);
        payload.put("user_id", user);
        payload.put("url", "/bad-time");
        payload.put(timeField, rawTime);
        return producer.send(topic, partition, System.currentTimeMillis(), JsonEvents.int64Key(user),
                JsonEvents.envelope(valueSchema, payload));
    }

    private static ObjectNode schema(String timeField) {
        Map<String, String> fields = new LinkedHashMap<>();
        fields.put("event_id", "int64");
        fields.put("user_id", "int32");
        fields.put("url", "string");
        if (timeField != null) {
            fields.put(timeField, "string");
        }
        return JsonEvents.structSchema("page_view", new LinkedHashMap<>(fields));
    }

    /** Creates both databases, the users table with initial plans, and the topic. */
    public void createSourceAndTopic(int partitions) throws SQLException {
        postgres.createDatabase(sourceDb);
        postgres.createDatabase(targetDb);
        try (Connection c = postgres.connect(sourceDb); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE users (id int PRIMARY KEY, plan text NOT NULL)");
            try (PreparedStatement insert = c.prepareStatement("INSERT INTO users VALUES (?, ?)")) {
                for (int id = 1; id <= users; id++) {
                    insert.setInt(1, id);
                    insert.setString(2, PLANS[0]);
                    insert.executeUpdate();
                    history.computeIfAbsent(id, k -> new TreeMap<>()).put(Long.MIN_VALUE, PLANS[0]);
                }
            }
        }
        broker.createTopic(topic, partitions);
    }

    /** Placeholder values for the page-view config examples. */
    public Map<String, String> placeholders(Path secretsDir) throws java.io.IOException {
        Map<String, String> values = postgres.placeholders(secretsDir);
        values.put("SOURCE_DB", sourceDb);
        values.put("TARGET_DB", targetDb);
        values.put("TOPIC", topic);
        return values;
    }

    /**
     * {@code rounds} times: commit a plan change for one user, then produce {@code eventsPerRound} events of
     * all users with the current wall-clock time. Event times never share a millisecond with a commit, so the
     * oracle has no boundary to argue about.
     */
    public void produceInterleaved(JsonEvents producer, int rounds, int eventsPerRound) throws SQLException {
        awaitReplicaSlots();
        try (Connection c = postgres.connect(sourceDb)) {
            for (int round = 0; round < rounds; round++) {
                changePlan(c, 1 + (round % users));
                for (int i = 0; i < eventsPerRound; i++) {
                    int user = 1 + (int) ((nextEventId * 7) % users);
                    send(producer, user, System.currentTimeMillis());
                }
                awaitNextMillisecond(System.currentTimeMillis());
            }
        }
        producer.flush();
    }

    /**
     * Waits (bounded), before the first plan change, until the source database has a logical replication slot and
     * every such slot has found its consistent point (confirmed_flush_lsn is set then). The oracle puts the initial
     * plans at Long.MIN_VALUE and every change at its commit time; the replica agrees only for changes its slot
     * streams. A change committed before that point is read by the replica's initial snapshot instead, whose rows
     * are valid from the beginning of time (replica.snapshot.valid.from=BEGINNING_OF_TIME): events before the
     * change then rightly get the new plan. A RUNNING task does not mean the slot is there: the replica creates it
     * asynchronously, seconds later on a loaded machine.
     */
    private void awaitReplicaSlots() {
        if (slotsReady) {
            return;
        }
        Awaitility.await("a replication slot on " + sourceDb + " at its consistent point before the first plan change")
                .atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(100))
                .until(() -> {
                    try (Connection c = postgres.connect(sourceDb); PreparedStatement ps = c.prepareStatement(
                            "SELECT count(*), count(*) FILTER (WHERE confirmed_flush_lsn IS NULL) FROM pg_replication_slots"
                                    + " WHERE database = ? AND slot_type = 'logical'")) {
                        ps.setString(1, sourceDb);
                        try (ResultSet rs = ps.executeQuery()) {
                            rs.next();
                            return rs.getLong(1) > 0 && rs.getLong(2) == 0;
                        }
                    }
                });
        slotsReady = true;
    }

    /** Events only, no changes (e.g. to keep a stream going around a crash). */
    public void produceEvents(JsonEvents producer, int count) {
        for (int i = 0; i < count; i++) {
            int user = 1 + (int) ((nextEventId * 7) % users);
            send(producer, user, System.currentTimeMillis());
        }
        producer.flush();
    }

    /** Id of the last event produced (ids start at 1). */
    public long lastEventId() {
        return nextEventId - 1;
    }

    public String targetDb() {
        return targetDb;
    }

    public String sourceDb() {
        return sourceDb;
    }

    /** The plain sink of the SMT example, without the transform: for tests of the sink's exactly-once alone. */
    public static Map<String, String> withoutEnrichment(Map<String, String> config) {
        config.keySet().removeIf(k -> k.startsWith("transforms"));
        return config;
    }

    public int producedCount() {
        return produced.size();
    }

    /** Waits (bounded) until the target holds at least every produced event, then checks exactly once and as-of. */
    public void awaitAndVerifyTarget(Duration timeout) throws SQLException {
        verify(timeout, true);
    }

    /** As {@link #awaitAndVerifyTarget} for a sink without enrichment: exactly once only. */
    public void awaitAndVerifyExactlyOnce(Duration timeout) throws SQLException {
        verify(timeout, false);
    }

    private void verify(Duration timeout, boolean checkPlans) throws SQLException {
        Awaitility.await("all " + produced.size() + " events in " + TARGET_TABLE)
                .atMost(timeout).pollInterval(Duration.ofSeconds(1))
                .until(() -> targetRowCount() >= produced.size());
        assertThat(targetColumns()).as("columns of " + TARGET_TABLE + " (users_plan comes from the enrichment)")
                .contains(checkPlans ? new String[] {"event_id", "users_plan"} : new String[] {"event_id"});
        Map<Long, Integer> copies = new HashMap<>();
        Map<Long, String> plans = new HashMap<>();
        try (Connection c = postgres.connect(targetDb); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT \"event_id\"" + (checkPlans ? ", \"users_plan\"" : "")
                     + " FROM " + TARGET_TABLE)) {
            while (rs.next()) {
                long id = rs.getLong(1);
                copies.merge(id, 1, Integer::sum);
                if (checkPlans) {
                    plans.put(id, rs.getString(2));
                }
            }
        }
        assertThat(copies.entrySet()).as("events written more than once")
                .filteredOn(e -> e.getValue() > 1).isEmpty();
        assertThat(copies.keySet()).as("event ids in the target").containsExactlyInAnyOrderElementsOf(expected.keySet());
        if (!checkPlans) {
            return;
        }
        List<String> wrong = new ArrayList<>();
        expected.forEach((id, plan) -> {
            if (!plan.equals(plans.get(id))) {
                wrong.add("event " + id + " (partition " + produced.get(id).partition() + ", offset "
                        + produced.get(id).offset() + "): expected " + plan + ", got " + plans.get(id));
            }
        });
        assertThat(wrong).as("events joined with a plan other than the one valid at their time").isEmpty();
    }

    private List<String> targetColumns() throws SQLException {
        List<String> columns = new ArrayList<>();
        try (Connection c = postgres.connect(targetDb); PreparedStatement ps = c.prepareStatement(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position")) {
            ps.setString(1, TARGET_TABLE);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    columns.add(rs.getString(1));
                }
            }
        }
        return columns;
    }

    public long targetRowCount() throws SQLException {
        try (Connection c = postgres.connect(targetDb); Statement s = c.createStatement()) {
            try (ResultSet exists = s.executeQuery("SELECT to_regclass('public." + TARGET_TABLE + "') IS NOT NULL")) {
                exists.next();
                if (!exists.getBoolean(1)) {
                    return 0;
                }
            }
            try (ResultSet rs = s.executeQuery("SELECT count(*) FROM " + TARGET_TABLE)) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /** Plan changes and enriched events in time order, for the quickstart's printout. */
    public List<String> timeline() throws SQLException {
        Map<Long, String> plans = new HashMap<>();
        try (Connection c = postgres.connect(targetDb); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT \"event_id\", \"users_plan\" FROM " + TARGET_TABLE)) {
            while (rs.next()) {
                plans.put(rs.getLong(1), rs.getString(2));
            }
        }
        TreeMap<Long, List<String>> byMicros = new TreeMap<>();
        for (Change change : changes) {
            byMicros.computeIfAbsent(change.micros(), k -> new ArrayList<>()).add(String.format(
                    "%s  CHANGE  user %d: plan %s -> %s (committed in Postgres)", clock(change.micros() / 1000),
                    change.user(), change.before(), change.after()));
        }
        eventTimes.forEach((id, ts) -> byMicros.computeIfAbsent(ts * 1000, k -> new ArrayList<>()).add(String.format(
                "%s  EVENT   #%-3d user %d  -> written with plan=%s", clock(ts), id, eventUsers.get(id), plans.get(id))));
        List<String> lines = new ArrayList<>();
        byMicros.values().forEach(lines::addAll);
        return lines;
    }

    private static String clock(long millis) {
        return java.time.format.DateTimeFormatter.ofPattern("HH:mm:ss.SSS")
                .withZone(java.time.ZoneId.systemDefault()).format(java.time.Instant.ofEpochMilli(millis));
    }

    private record Change(long micros, int user, String before, String after) {
    }

    private void changePlan(Connection c, int user) throws SQLException {
        // Always a different plan: free -> pro -> team -> enterprise -> pro ...
        int current = java.util.Arrays.asList(PLANS).indexOf(history.get(user).lastEntry().getValue());
        String plan = PLANS[1 + (current % (PLANS.length - 1))];
        long commitMicros;
        try (PreparedStatement update = c.prepareStatement("UPDATE users SET plan = ? WHERE id = ?")) {
            update.setString(1, plan);
            update.setInt(2, user);
            update.executeUpdate();
        }
        // Autocommit: the update is committed; its commit time is what the replica uses as valid-from.
        try (PreparedStatement ts = c.prepareStatement(
                "SELECT (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint FROM users WHERE id = ?")) {
            ts.setInt(1, user);
            try (ResultSet rs = ts.executeQuery()) {
                rs.next();
                commitMicros = rs.getLong(1);
            }
        }
        changes.add(new Change(commitMicros, user, history.get(user).lastEntry().getValue(), plan));
        history.get(user).put(commitMicros, plan);
        awaitNextMillisecond(commitMicros / 1000);
    }

    private void send(JsonEvents producer, int user, long timestamp) {
        long id = nextEventId++;
        ObjectNode payload = JsonEvents.payload();
        payload.put("event_id", id);
        payload.put("user_id", user);
        payload.put("url", "/page/" + (id % 13));
        long recordTimestamp = timestamp;
        if (timeField != null) {
            payload.put(timeField, java.time.Instant.ofEpochMilli(timestamp).toString());
            recordTimestamp = timestamp - RECORD_TIMESTAMP_LAG_MS;
        }
        RecordMetadata meta = producer.send(topic, null, recordTimestamp, JsonEvents.int64Key(user),
                JsonEvents.envelope(valueSchema, payload));
        produced.put(id, meta);
        eventTimes.put(id, timestamp);
        eventUsers.put(id, user);
        // Valid at t: the latest version whose commit time, in whole milliseconds, is <= t.
        Map.Entry<Long, String> version = history.get(user).floorEntry(timestamp * 1000 + 999);
        expected.put(id, version.getValue());
    }

    /** Bounded: returns once the wall clock is past {@code millis}, so no event shares a millisecond with a commit. */
    private static void awaitNextMillisecond(long millis) {
        Waits.until(() -> System.currentTimeMillis() > millis + 1, Duration.ofSeconds(1), "the clock to move on");
    }
}
