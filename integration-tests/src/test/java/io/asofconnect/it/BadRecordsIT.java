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
import java.util.Properties;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Malformed JSON and an event without its join key (AsOfEnrich as a transform), and an event whose event-time
 * field ({@code enrich.time.source=FIELD}) holds an unparsable string (enrichment hosted in the sink), between good
 * events: with errors.tolerance=all they go to the dead letter queue with the reason in headers and the good events
 * land exactly once; with none the task fails with a clear message and the target's offsets never pass the bad
 * record.
 */
@ExtendWith(PrintLogsOnFailure.class)
class BadRecordsIT {

    private static final byte[] MALFORMED = "{\"schema\": {\"type\": \"struct\", oops".getBytes(StandardCharsets.UTF_8);
    private static final ObjectNode NO_KEY_SCHEMA = JsonEvents.structSchema("page_view",
            new LinkedHashMap<>(Map.of("event_id", "int64", "url", "string")));

    private static final String TIME_FIELD = "event_time";
    /** Looks like a time to a person, is none to a parser; the DLQ reason must not repeat it. */
    private static final String UNPARSABLE_TIME = "yesterday at 25:61";

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

        List<ConsumerRecord<byte[], byte[]>> dlq = readTopic("dlq_page_views_errors", 2, Duration.ofSeconds(60));
        assertThat(dlq).hasSize(2);
        for (ConsumerRecord<byte[], byte[]> record : dlq) {
            Map<String, String> headers = headers(record);
            assertThat(headers).containsEntry("__connect.errors.topic", scenario.topic())
                    .containsKey("__connect.errors.exception.class.name")
                    .containsKey("__connect.errors.exception.message");
            assertThat(Long.parseLong(headers.get("__connect.errors.offset"))).isIn(badOffsets);
        }
        assertThat(dlq).extracting(r -> headers(r).get("__connect.errors.stage"))
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
            bad = producer.send(scenario.topic(), 0, System.currentTimeMillis(), JsonEvents.int64Key(1), MALFORMED);
            scenario.produceEvents(producer, 5);
        }

        JsonNode failed = worker.rest().awaitTaskFailed(connector, Duration.ofSeconds(120));
        assertThat(failed.path("trace").asText()).contains("Tolerance exceeded").containsIgnoringCase("converter");

        assertNothingWrittenPast(connector, scenario, lastGoodBefore, bad.offset());
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

        List<ConsumerRecord<byte[], byte[]>> dlq = readTopic("dlq_ts_page_views_errors", 1, Duration.ofSeconds(60));
        assertThat(dlq).hasSize(1);
        Map<String, String> headers = headers(dlq.get(0));
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
            bad = scenario.sendWithRawEventTime(producer, 0, 9001, 1, UNPARSABLE_TIME);
            scenario.produceEvents(producer, 5);
        }

        JsonNode failed = worker.rest().awaitTaskFailed(connector, Duration.ofSeconds(120));
        assertThat(failed.path("trace").asText())
                .contains(scenario.topic() + "-0@" + bad.offset() + " cannot be written")
                .contains("enrich.time.field=" + TIME_FIELD).contains("neither epoch millis nor an ISO-8601")
                .contains("errors.tolerance=all")
                .doesNotContain(UNPARSABLE_TIME);
        assertNothingWrittenPast(connector, scenario, lastGoodBefore, bad.offset());
        worker.rest().deleteConnector(connector);
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

    /** Neither a row after the bad record nor an offset past it is in the target. */
    private static void assertNothingWrittenPast(String connector, PageViews scenario, long lastGoodBefore,
                                                 long badOffset) throws java.sql.SQLException {
        try (Connection c = postgres.connect(scenario.targetDb()); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT to_regclass('public." + PageViews.TARGET_TABLE + "') IS NOT NULL")) {
                rs.next();
                if (rs.getBoolean(1)) {
                    try (ResultSet max = s.executeQuery("SELECT coalesce(max(\"event_id\"), 0) FROM "
                            + PageViews.TARGET_TABLE)) {
                        max.next();
                        assertThat(max.getLong(1)).as("no event after the bad record is written")
                                .isLessThanOrEqualTo(lastGoodBefore);
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT \"next_offset\" FROM asof_connect_offsets"
                    + " WHERE \"connector_name\" = ? AND \"topic\" = ?")) {
                ps.setString(1, connector);
                ps.setString(2, scenario.topic());
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        assertThat(rs.getLong(1)).as("next offset in the target").isLessThanOrEqualTo(badOffset);
                    }
                }
            } catch (java.sql.SQLException noOffsetsTableYet) {
                assertThat(noOffsetsTableYet.getSQLState()).as("only a missing offsets table is acceptable")
                        .isEqualTo("42P01");
            }
        }
    }

    private static byte[] noKeyEvent(long id) {
        ObjectNode payload = JsonEvents.payload();
        payload.put("event_id", id);
        payload.put("url", "/no-user");
        return JsonEvents.envelope(NO_KEY_SCHEMA, payload);
    }

    private static Map<String, String> headers(ConsumerRecord<byte[], byte[]> record) {
        Map<String, String> headers = new LinkedHashMap<>();
        for (Header h : record.headers()) {
            headers.put(h.key(), h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8));
        }
        return headers;
    }

    private static List<ConsumerRecord<byte[], byte[]>> readTopic(String topic, int atLeast, Duration timeout) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "it-reader-" + topic);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            Awaitility.await(atLeast + " records on " + topic).atMost(timeout).pollInterval(Duration.ofMillis(10))
                    .until(() -> {
                        consumer.poll(Duration.ofMillis(500)).forEach(records::add);
                        return records.size() >= atLeast;
                    });
            // A short extra poll: more records than expected would be a duplicate in the DLQ.
            consumer.poll(Duration.ofSeconds(2)).forEach(records::add);
        }
        return records;
    }
}
