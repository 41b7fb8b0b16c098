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
final class PageViews {

    static final String TOPIC = "page_views";
    static final String TARGET_TABLE = "page_views_enriched";
    static final String SOURCE_DB = "shop";
    static final String TARGET_DB = "warehouse";
    static final String[] PLANS = {"free", "pro", "team", "enterprise"};

    private static final ObjectNode VALUE_SCHEMA = JsonEvents.structSchema("page_view",
            new LinkedHashMap<>(Map.of("event_id", "int64", "user_id", "int32", "url", "string")));

    private final PostgresServer postgres;
    private final KafkaBroker broker;
    private final int users;
    /** Per user, the plan history: commit time (epoch micros) -> plan; the snapshot's rows at Long.MIN_VALUE. */
    private final Map<Integer, TreeMap<Long, String>> history = new HashMap<>();
    /** Per event id, the plan the event must be joined with. */
    private final Map<Long, String> expected = new LinkedHashMap<>();
    private final Map<Long, RecordMetadata> produced = new LinkedHashMap<>();
    private long nextEventId = 1;
    private int changeCounter;

    PageViews(PostgresServer postgres, KafkaBroker broker, int users) {
        this.postgres = postgres;
        this.broker = broker;
        this.users = users;
    }

    /** Creates both databases, the users table with initial plans, and the topic. */
    void createSourceAndTopic(int partitions) throws SQLException {
        postgres.createDatabase(SOURCE_DB);
        postgres.createDatabase(TARGET_DB);
        try (Connection c = postgres.connect(SOURCE_DB); Statement s = c.createStatement()) {
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
        broker.createTopic(TOPIC, partitions);
    }

    /** Placeholder values for the page-view config examples. */
    Map<String, String> placeholders(Path secretsDir) throws java.io.IOException {
        Path secrets = secretsDir.resolve("secrets.properties");
        Files.createDirectories(secretsDir);
        Files.writeString(secrets, "postgres.password=postgres\n");
        Map<String, String> values = new HashMap<>();
        values.put("PG_HOST", postgres.host());
        values.put("PG_PORT", Integer.toString(postgres.port()));
        values.put("PG_USER", PostgresServer.USER);
        values.put("SOURCE_DB", SOURCE_DB);
        values.put("TARGET_DB", TARGET_DB);
        values.put("SECRETS_FILE", secrets.toString());
        return values;
    }

    /**
     * {@code rounds} times: commit a plan change for one user, then produce {@code eventsPerRound} events of
     * all users with the current wall-clock time. Event times never share a millisecond with a commit, so the
     * oracle has no boundary to argue about.
     */
    void produceInterleaved(JsonEvents producer, int rounds, int eventsPerRound) throws SQLException {
        try (Connection c = postgres.connect(SOURCE_DB)) {
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

    /** Events only, no changes (e.g. to keep a stream going around a crash). */
    void produceEvents(JsonEvents producer, int count) {
        for (int i = 0; i < count; i++) {
            int user = 1 + (int) ((nextEventId * 7) % users);
            send(producer, user, System.currentTimeMillis());
        }
        producer.flush();
    }

    int producedCount() {
        return produced.size();
    }

    /** Waits (bounded) until the target holds at least every produced event, then checks exactly once and as-of. */
    void awaitAndVerifyTarget(Duration timeout) throws SQLException {
        Awaitility.await("all " + produced.size() + " events in " + TARGET_TABLE)
                .atMost(timeout).pollInterval(Duration.ofSeconds(1))
                .until(() -> targetRowCount() >= produced.size());
        Map<Long, Integer> copies = new HashMap<>();
        Map<Long, String> plans = new HashMap<>();
        try (Connection c = postgres.connect(TARGET_DB); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT \"event_id\", \"users_plan\" FROM " + TARGET_TABLE)) {
            while (rs.next()) {
                long id = rs.getLong(1);
                copies.merge(id, 1, Integer::sum);
                plans.put(id, rs.getString(2));
            }
        }
        assertThat(copies.entrySet()).as("events written more than once")
                .filteredOn(e -> e.getValue() > 1).isEmpty();
        assertThat(copies.keySet()).as("event ids in the target").containsExactlyInAnyOrderElementsOf(expected.keySet());
        List<String> wrong = new ArrayList<>();
        expected.forEach((id, plan) -> {
            if (!plan.equals(plans.get(id))) {
                wrong.add("event " + id + " (partition " + produced.get(id).partition() + ", offset "
                        + produced.get(id).offset() + "): expected " + plan + ", got " + plans.get(id));
            }
        });
        assertThat(wrong).as("events joined with a plan other than the one valid at their time").isEmpty();
    }

    long targetRowCount() throws SQLException {
        try (Connection c = postgres.connect(TARGET_DB); Statement s = c.createStatement()) {
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

    /** A human-readable view of the target for the quickstart: event, time, user, plan. */
    List<String> describeTarget(int limit) throws SQLException {
        List<String> lines = new ArrayList<>();
        try (Connection c = postgres.connect(TARGET_DB);
             PreparedStatement ps = c.prepareStatement("SELECT \"event_id\", \"user_id\", \"url\", \"users_plan\" FROM "
                     + TARGET_TABLE + " ORDER BY \"event_id\" LIMIT ?")) {
            ps.setInt(1, limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    lines.add(String.format("event %3d  user %d  %-14s plan=%s", rs.getLong(1), rs.getInt(2),
                            rs.getString(3), rs.getString(4)));
                }
            }
        }
        return lines;
    }

    private void changePlan(Connection c, int user) throws SQLException {
        String plan = PLANS[1 + (changeCounter++ % (PLANS.length - 1))];
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
        history.get(user).put(commitMicros, plan);
        awaitNextMillisecond(commitMicros / 1000);
    }

    private void send(JsonEvents producer, int user, long timestamp) {
        long id = nextEventId++;
        ObjectNode payload = JsonEvents.payload();
        payload.put("event_id", id);
        payload.put("user_id", user);
        payload.put("url", "/page/" + (id % 13));
        RecordMetadata meta = producer.send(TOPIC, null, timestamp, JsonEvents.int64Key(user),
                JsonEvents.envelope(VALUE_SCHEMA, payload));
        produced.put(id, meta);
        // Valid at t: the latest version whose commit time, in whole milliseconds, is <= t.
        Map.Entry<Long, String> version = history.get(user).floorEntry(timestamp * 1000 + 999);
        expected.put(id, version.getValue());
    }

    /** Bounded: returns once the wall clock is past {@code millis}, so no event shares a millisecond with a commit. */
    private static void awaitNextMillisecond(long millis) {
        Waits.until(() -> System.currentTimeMillis() > millis + 1, Duration.ofSeconds(1), "the clock to move on");
    }
}
