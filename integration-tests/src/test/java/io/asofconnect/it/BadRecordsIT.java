package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.Topics;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Malformed JSON and an event without its join key (AsOfEnrich as a transform), and an event whose event-time
 * field ({@code enrich.time.source=FIELD}) holds an unparsable string (enrichment hosted in the sink), and records
 * only the target refuses (a value that is no struct, a schemaless map whose field does not fit its column, rows
 * breaking a CHECK and a NOT NULL constraint), between good events: with errors.tolerance=all they go to the dead
 * letter queue with the reason in headers and the good events land exactly once; with none the task fails with a
 * clear message, the target holds the good events before the bad record, and its offsets stop exactly at it.
 */
@ExtendWith(PrintLogsOnFailure.class)
class BadRecordsIT {

    private static final byte[] MALFORMED = "{\"schema\": {\"type\": \"struct\", oops".getBytes(StandardCharsets.UTF_8);
    private static final ObjectNode NO_KEY_SCHEMA = JsonEvents.structSchema("page_view",
            new LinkedHashMap<>(Map.of("event_id", "int64", "url", "string")));

    private static final String TIME_FIELD = "event_time";
    /** Looks like a time to a person, is none to a parser; the DLQ reason must not repeat it. */
    private static final String UNPARSABLE_TIME = "yesterday at 25:61";

    /** Breaks the target table's CHECK constraint; the DLQ reason and the task's trace must not repeat it. */
    private static final String FORBIDDEN_URL = "/forbidden/secret-page";
    /** Cannot be cast to the bigint column event_id; must not be repeated either. */
    private static final String NOT_A_NUMBER = "nine-thousand-and-two";
    private static final String CHECK_NAME = "url_not_forbidden";

    private static TestPipeline pipeline;
    private static PostgresServer postgres;
    private static KafkaBroker broker;
    private static ConnectWorker worker;
    private static Path work;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("bad-records");
        work = pipeline.work();
        postgres = pipeline.postgres();
        broker = pipeline.broker();
        worker = pipeline.distributedWorker("worker", "bad");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void toleranceAllSendsBadRecordsToTheDeadLetterQueueWithReasonsAndWritesGoodOnesOnce() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 3, "dlq");
        scenario.createSourceAndTopic(1);
        Map<String, String> config = ConfigTemplates.connectorConfig("distributed/page-views-smt-sink.json",
                scenario.placeholders(work.resolve("secrets")));
        config.put("tasks.max", "1");
        // One replica per source database: a slot belongs to one database.
        config.put("transforms.plan.replica.name", "users_dlq");
        config.put("transforms.plan.replica.slot.name", "asof_users_dlq");
        config.put("errors.tolerance", "all");
        config.put("errors.deadletterqueue.topic.name", "dlq_page_views_errors");
        config.put("errors.deadletterqueue.topic.replication.factor", "1");
        config.put("errors.deadletterqueue.context.headers.enable", "true");
        String connector = "dlq-page-views";
        worker.rest().putConnectorConfig(connector, config);
        worker.rest().awaitRunning(connector, 1, Duration.ofSeconds(90));

        List<Long> badOffsets = new ArrayList<>();
        try (JsonEvents producer = new JsonEvents(broker)) {
            scenario.produceInterleaved(producer, 2, 5);
            badOffsets.add(producer.send(scenario.topic(), 0, System.currentTimeMillis(), JsonEvents.int64Key(1),
                    MALFORMED).offset());
            badOffsets.add(producer.send(scenario.topic(), 0, System.currentTimeMillis(), JsonEvents.int64Key(1),
                    noKeyEvent(9001)).offset());
            scenario.produceInterleaved(producer, 2, 5);
        }
        scenario.awaitAndVerifyTarget(Duration.ofSeconds(120));

        List<ConsumerRecord<byte[], byte[]>> dlq = Topics.readAll(broker, "dlq_page_views_errors", 2, Duration.ofSeconds(60));
        assertThat(dlq).hasSize(2);
        for (ConsumerRecord<byte[], byte[]> record : dlq) {
            Map<String, String> headers = Topics.headers(record);
            assertThat(headers).containsEntry("__connect.errors.topic", scenario.topic())
                    .containsKey("__connect.errors.exception.class.name")
                    .containsKey("__connect.errors.exception.message");
            assertThat(Long.parseLong(headers.get("__connect.errors.offset"))).isIn(badOffsets);
        }
        assertThat(dlq).extracting(r -> Topics.headers(r).get("__connect.errors.stage"))
                .as("the malformed record fails in the converter, the keyless one in the transform")
                .containsExactlyInAnyOrder("VALUE_CONVERTER", "TRANSFORMATION");
        worker.rest().deleteConnector(connector);
    }

    @Test
    void toleranceNoneFailsTheTaskAndTheOffsetsStopBeforeTheBadRecord() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 3, "strict");
        scenario.createSourceAndTopic(1);
        Map<String, String> config = ConfigTemplates.connectorConfig("distributed/page-views-smt-sink.json",
                scenario.placeholders(work.resolve("secrets")));
        config.put("tasks.max", "1");
        config.put("transforms.plan.replica.name", "users_strict");
        config.put("transforms.plan.replica.slot.name", "asof_users_strict");
        config.put("errors.tolerance", "none");
        String connector = "strict-page-views";
        worker.rest().putConnectorConfig(connector, config);
        worker.rest().awaitRunning(connector, 1, Duration.ofSeconds(90));

        RecordMetadata bad;
        long lastGoodBefore;
        try (JsonEvents producer = new JsonEvents(broker)) {
            scenario.produceInterleaved(producer, 2, 5);
            lastGoodBefore = scenario.lastEventId();
            // The good records land first, so that where the offsets stop says something about the bad one.
            scenario.awaitAndVerifyTarget(Duration.ofSeconds(120));
            bad = producer.send(scenario.topic(), 0, System.currentTimeMillis(), JsonEvents.int64Key(1), MALFORMED);
            scenario.produceEvents(producer, 5);
        }

        JsonNode failed = worker.rest().awaitTaskFailed(connector, Duration.ofSeconds(120));
        assertThat(failed.path("trace").asText()).contains("Tolerance exceeded").containsIgnoringCase("converter");

        assertOffsetsStopExactlyAt(connector, scenario, lastGoodBefore, bad.partition(), bad.offset());
        worker.rest().deleteConnector(connector);
    }

    @Test
    void unparsableEventTimeFieldGoesToTheDeadLetterQueueWithTheReasonAndGoodEventsLandOnce() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 3, "tsdlq").withEventTimeField(TIME_FIELD);
        scenario.createSourceAndTopic(1);
        Map<String, String> config = eventTimeFieldConfig(scenario, "tsdlq");
        config.put("errors.tolerance", "all");
        config.put("errors.deadletterqueue.topic.name", "dlq_ts_page_views_errors");
        config.put("errors.deadletterqueue.topic.replication.factor", "1");
        config.put("errors.deadletterqueue.context.headers.enable", "true");
        String connector = "tsdlq-page-views";
        worker.rest().putConnectorConfig(connector, config);
        worker.rest().awaitRunning(connector, 1, Duration.ofSeconds(90));

        RecordMetadata bad;
        try (JsonEvents producer = new JsonEvents(broker)) {
            scenario.produceInterleaved(producer, 2, 5);
            bad = scenario.sendWithRawEventTime(producer, 0, 9001, 1, UNPARSABLE_TIME);
            scenario.produceInterleaved(producer, 2, 5);
        }
        scenario.awaitAndVerifyTarget(Duration.ofSeconds(120));

        List<ConsumerRecord<byte[], byte[]>> dlq = Topics.readAll(broker, "dlq_ts_page_views_errors", 1, Duration.ofSeconds(60));
        assertThat(dlq).hasSize(1);
        Map<String, String> headers = Topics.headers(dlq.get(0));
        assertThat(headers).containsEntry("__connect.errors.topic", scenario.topic())
                .containsEntry("__connect.errors.offset", Long.toString(bad.offset()))
                .containsEntry("__connect.errors.exception.class.name", "org.apache.kafka.connect.errors.DataException");
        assertThat(headers.get("__connect.errors.exception.message"))
                .contains("enrich.time.field=" + TIME_FIELD).contains("neither epoch millis nor an ISO-8601")
                .as("the reason names the field, never the record's data").doesNotContain(UNPARSABLE_TIME);
        assertThat(new String(dlq.get(0).value(), StandardCharsets.UTF_8)).as("the original record, as consumed")
                .contains(UNPARSABLE_TIME);
        worker.rest().deleteConnector(connector);
    }

    @Test
    void unparsableEventTimeFieldWithToleranceNoneFailsTheTaskBeforeTheBadRecord() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 3, "tsstrict").withEventTimeField(TIME_FIELD);
        scenario.createSourceAndTopic(1);
        Map<String, String> config = eventTimeFieldConfig(scenario, "tsstrict");
        config.put("errors.tolerance", "none");
        String connector = "tsstrict-page-views";
        worker.rest().putConnectorConfig(connector, config);
        worker.rest().awaitRunning(connector, 1, Duration.ofSeconds(90));

        RecordMetadata bad;
        long lastGoodBefore;
        try (JsonEvents producer = new JsonEvents(broker)) {
            scenario.produceInterleaved(producer, 2, 5);
            lastGoodBefore = scenario.lastEventId();
            scenario.awaitAndVerifyTarget(Duration.ofSeconds(120));
            bad = scenario.sendWithRawEventTime(producer, 0, 9001, 1, UNPARSABLE_TIME);
            scenario.produceEvents(producer, 5);
        }

        JsonNode failed = worker.rest().awaitTaskFailed(connector, Duration.ofSeconds(120));
        assertThat(failed.path("trace").asText())
                .contains(scenario.topic() + "-0@" + bad.offset() + " cannot be written")
                .contains("enrich.time.field=" + TIME_FIELD).contains("neither epoch millis nor an ISO-8601")
                .contains("errors.tolerance=all")
                .doesNotContain(UNPARSABLE_TIME);
        assertOffsetsStopExactlyAt(connector, scenario, lastGoodBefore, bad.partition(), bad.offset());
        worker.rest().deleteConnector(connector);
    }

    @Test
    void recordsTheTargetRefusesGoToTheDeadLetterQueueWithReasonsAndTheirBatchLandsOnce() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 3, "refused");
        scenario.createSourceAndTopic(1);
        createConstrainedTargetTable(scenario);
        Map<String, Long> bad = new LinkedHashMap<>();
        // All produced before the connector starts: the first poll takes good and bad records into one batch.
        try (JsonEvents producer = new JsonEvents(broker)) {
            scenario.produceEvents(producer, 10);
            bad.put("not a struct", sendValue(producer, scenario, 1, stringValue("just a string")));
            bad.put("schemaless map, text for a bigint", sendValue(producer, scenario, 1, schemalessEvent()));
            bad.put("CHECK violation", sendValue(producer, scenario, 2, pageView(9003, 2, FORBIDDEN_URL)));
            bad.put("NOT NULL violation", sendValue(producer, scenario, 3, pageView(9004, null, "/no-user")));
            scenario.produceEvents(producer, 10);
        }
        String connector = "refused-page-views";
        Map<String, String> config = plainSinkConfig(scenario);
        config.put("errors.tolerance", "all");
        config.put("errors.deadletterqueue.topic.name", "dlq_refused_errors");
        config.put("errors.deadletterqueue.topic.replication.factor", "1");
        config.put("errors.deadletterqueue.context.headers.enable", "true");
        worker.rest().putConnectorConfig(connector, config);
        worker.rest().awaitRunning(connector, 1, Duration.ofSeconds(90));

        scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(120));
        List<ConsumerRecord<byte[], byte[]>> dlq = Topics.readAll(broker, "dlq_refused_errors", bad.size(),
                Duration.ofSeconds(60));
        Map<Long, Map<String, String>> byOffset = new LinkedHashMap<>();
        for (ConsumerRecord<byte[], byte[]> record : dlq) {
            Map<String, String> headers = Topics.headers(record);
            assertThat(headers).containsEntry("__connect.errors.topic", scenario.topic())
                    .containsEntry("__connect.errors.stage", "TASK_PUT")
                    .containsEntry("__connect.errors.exception.class.name",
                            "org.apache.kafka.connect.errors.DataException");
            byOffset.put(Long.parseLong(headers.get("__connect.errors.offset")), headers);
        }
        assertThat(dlq).as("each refused record once in the DLQ").hasSize(bad.size());
        assertThat(byOffset.keySet()).containsExactlyInAnyOrderElementsOf(bad.values());
        assertThat(reason(byOffset, bad, "not a struct")).contains("is a String; expected a struct");
        assertThat(reason(byOffset, bad, "schemaless map, text for a bigint"))
                .contains(PageViews.TARGET_TABLE).contains("SQLState 22P02").doesNotContain(NOT_A_NUMBER);
        assertThat(reason(byOffset, bad, "CHECK violation")).contains("SQLState 23514")
                .contains("constraint \"" + CHECK_NAME + "\"").doesNotContain(FORBIDDEN_URL);
        assertThat(reason(byOffset, bad, "NOT NULL violation")).contains("SQLState 23502").contains("column \"user_id\"");
        assertThat(nextOffsets(connector, scenario)).as("the offsets row moved past the refused records")
                .containsExactly((long) scenario.producedCount() + bad.size());
        worker.rest().deleteConnector(connector);
    }

    @Test
    void aConstraintViolationWithToleranceNoneFailsTheTaskAndTheOffsetsStopBeforeIt() throws Exception {
        PageViews scenario = new PageViews(postgres, broker, 3, "refusedstrict");
        scenario.createSourceAndTopic(1);
        createConstrainedTargetTable(scenario);
        long lastGoodBefore;
        long badOffset;
        String connector = "refusedstrict-page-views";
        Map<String, String> config = plainSinkConfig(scenario);
        config.put("errors.tolerance", "none");
        worker.rest().putConnectorConfig(connector, config);
        try (JsonEvents producer = new JsonEvents(broker)) {
            scenario.produceEvents(producer, 5);
            lastGoodBefore = scenario.lastEventId();
            // The good records land first (a batch holding the bad record is rolled back whole, good ones too).
            scenario.awaitAndVerifyExactlyOnce(Duration.ofSeconds(120));
            badOffset = sendValue(producer, scenario, 2, pageView(9003, 2, FORBIDDEN_URL));
            scenario.produceEvents(producer, 5);
        }

        JsonNode failed = worker.rest().awaitTaskFailed(connector, Duration.ofSeconds(120));
        assertThat(failed.path("trace").asText())
                .contains(scenario.topic() + "-0@" + badOffset + " cannot be written")
                .contains("SQLState 23514").contains(CHECK_NAME)
                .contains("errors.tolerance=all")
                .doesNotContain(FORBIDDEN_URL);
        assertOffsetsStopExactlyAt(connector, scenario, lastGoodBefore, 0, badOffset);
        worker.rest().deleteConnector(connector);
    }

    /** The sink alone (no enrichment: the bad records here are the target's to refuse), one task. */
    private static Map<String, String> plainSinkConfig(PageViews scenario) throws Exception {
        Map<String, String> config = PageViews.withoutEnrichment(ConfigTemplates.connectorConfig(
                "distributed/page-views-smt-sink.json", scenario.placeholders(work.resolve("secrets"))));
        config.put("tasks.max", "1");
        return config;
    }

    /** The target table as a DBA would make it, with constraints the sink cannot know about. */
    private static void createConstrainedTargetTable(PageViews scenario) throws java.sql.SQLException {
        try (Connection c = postgres.connect(scenario.targetDb()); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + PageViews.TARGET_TABLE + " (\"event_id\" bigint NOT NULL,"
                    + " \"user_id\" integer NOT NULL, \"url\" text NOT NULL CONSTRAINT " + CHECK_NAME
                    + " CHECK (\"url\" NOT LIKE '/forbidden%'))");
        }
    }

    private static long sendValue(JsonEvents producer, PageViews scenario, int user, byte[] value) {
        return producer.send(scenario.topic(), 0, System.currentTimeMillis(), JsonEvents.int64Key(user), value)
                .offset();
    }

    private static byte[] stringValue(String text) {
        return ("{\"schema\":{\"type\":\"string\",\"optional\":false},\"payload\":\"" + text + "\"}")
                .getBytes(StandardCharsets.UTF_8);
    }

    /** {"schema": null, ...}: the JsonConverter hands the sink a map, whose event_id here is text. */
    private static byte[] schemalessEvent() {
        return ("{\"schema\":null,\"payload\":{\"event_id\":\"" + NOT_A_NUMBER + "\",\"user_id\":1,"
                + "\"url\":\"/schemaless\"}}").getBytes(StandardCharsets.UTF_8);
    }

    /** A page view whose user_id is optional in the schema, so that it may be null. */
    private static byte[] pageView(long id, Integer user, String url) {
        ObjectNode schema = JsonEvents.structSchema("page_view",
                new LinkedHashMap<>(Map.of("event_id", "int64", "user_id", "int32", "url", "string")));
        schema.withArray("fields").forEach(f -> ((ObjectNode) f).put("optional", true));
        ObjectNode payload = JsonEvents.payload();
        payload.put("event_id", id);
        if (user == null) {
            payload.putNull("user_id");
        } else {
            payload.put("user_id", user);
        }
        payload.put("url", url);
        return JsonEvents.envelope(schema, payload);
    }

    private static String reason(Map<Long, Map<String, String>> byOffset, Map<String, Long> bad, String which) {
        return byOffset.get(bad.get(which)).get("__connect.errors.exception.message");
    }

    private static List<Long> nextOffsets(String connector, PageViews scenario) throws java.sql.SQLException {
        List<Long> offsets = new ArrayList<>();
        try (Connection c = postgres.connect(scenario.targetDb()); PreparedStatement ps = c.prepareStatement(
                "SELECT \"next_offset\" FROM asof_connect_offsets WHERE \"connector_name\" = ? AND \"topic\" = ?")) {
            ps.setString(1, connector);
            ps.setString(2, scenario.topic());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    offsets.add(rs.getLong(1));
                }
            }
        }
        return offsets;
    }

    /** The hosted-enrichment example with the event time read from {@link #TIME_FIELD}; one replica per database. */
    private static Map<String, String> eventTimeFieldConfig(PageViews scenario, String name) throws Exception {
        Map<String, String> config = ConfigTemplates.connectorConfig("distributed/page-views-enriched-sink.json",
                scenario.placeholders(work.resolve("secrets")));
        config.put("tasks.max", "1");
        config.put("enrich.time.source", "FIELD");
        config.put("enrich.time.field", TIME_FIELD);
        config.put("replica.name", "users_" + name);
        config.put("replica.slot.name", "asof_users_" + name);
        return config;
    }

    /**
     * The target holds exactly the events before the bad record, each once, and its offsets row for the bad
     * record's partition says the bad record is next: not past it (it would be skipped on a restart), not before
     * it (good records would be written again). The good records were written before the bad one was sent, so
     * the offsets table and the row must exist.
     */
    private static void assertOffsetsStopExactlyAt(String connector, PageViews scenario, long lastGoodBefore,
                                                   int badPartition, long badOffset) throws java.sql.SQLException {
        try (Connection c = postgres.connect(scenario.targetDb()); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*), count(DISTINCT \"event_id\"), coalesce(max(\"event_id\"), 0)"
                     + " FROM " + PageViews.TARGET_TABLE)) {
            rs.next();
            assertThat(List.of(rs.getLong(1), rs.getLong(2), rs.getLong(3)))
                    .as("rows, distinct event ids and the last event id in the target: events 1..%s, nothing after the bad record",
                            lastGoodBefore)
                    .containsExactly(lastGoodBefore, lastGoodBefore, lastGoodBefore);
        }
        Map<Integer, Long> next;
        try {
            next = new SinkOffsets(postgres, broker, scenario.targetDb(), connector, scenario.topic(), 1).inTarget();
        } catch (java.sql.SQLException e) {
            throw new AssertionError("the offsets table must exist: the records before the bad one were committed", e);
        }
        assertThat(next).as("next offset per partition in the target's offsets table").containsExactly(Map.entry(badPartition, badOffset));
    }

    private static byte[] noKeyEvent(long id) {
        ObjectNode payload = JsonEvents.payload();
        payload.put("event_id", id);
        payload.put("url", "/no-user");
        return JsonEvents.envelope(NO_KEY_SCHEMA, payload);
    }
}
