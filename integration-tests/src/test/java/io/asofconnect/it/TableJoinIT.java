package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import io.asofconnect.it.harness.ConnectRest;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.WorkerJmx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The table-table join on real parts (plugin from plugin.path, a distributed worker with exactly-once source support,
 * a KRaft broker, Postgres): the timeline view ({@link Timeline}) over seeded posts and follows, then a random
 * workload of changes to both tables in rounds. After the snapshot and after each round, at a quiescent point, the
 * target table must equal the same join run as SQL on the source database; the view published as UPSERT and as
 * RETRACT (applied with {@code changelog.op.field}) must both get there. APPEND is refused for this view, which can
 * update, by config/validate and by PUT config, naming why.
 */
@ExtendWith(PrintLogsOnFailure.class)
class TableJoinIT {

    private static final int PARTITIONS = 2;
    private static final int ROUNDS = 3;
    private static final int TRANSACTIONS_PER_ROUND = 120;
    private static final Duration SETTLE = Duration.ofSeconds(3);
    private static final Duration QUIESCE_TIMEOUT = Duration.ofSeconds(60);
    /** Encoding -> the view's topic, its replica's name and the target table, all one name. */
    private static final Map<String, String> TABLES = new LinkedHashMap<>();

    static {
        TABLES.put("UPSERT", "timeline_upsert");
        TABLES.put("RETRACT", "timeline_retract");
    }

    private static TestPipeline pipeline;
    private static ConnectWorker worker;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("table-join");
        worker = pipeline.distributedWorker("worker", "tj", Timeline.workerProperties());
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void upsertAndRetractViewsEqualTheSqlJoinAtEveryQuiescentPoint() throws Exception {
        long seed = System.nanoTime();
        System.out.println("TableJoinIT workload from seed " + seed);
        Timeline timeline = new Timeline(pipeline.postgres(), pipeline.broker(), "tj", 12, seed);
        timeline.createSource(40, 50);
        Map<String, String> values = timeline.placeholders(pipeline.work().resolve("secrets"), pipeline.work().resolve("replicas"));
        for (Map.Entry<String, String> e : TABLES.entrySet()) {
            String encoding = e.getKey();
            String table = e.getValue();
            timeline.createTargetTable(table);
            pipeline.broker().createTopic(table, PARTITIONS);
            worker.rest().putConnectorConfig(viewName(encoding), timeline.viewConfig(values, table, encoding, table));
            worker.rest().putConnectorConfig(sinkName(encoding), timeline.sinkConfig(values, table, table, encoding));
        }
        for (String encoding : TABLES.keySet()) {
            worker.rest().awaitRunning(viewName(encoding), 1, Duration.ofSeconds(90));
            worker.rest().awaitRunning(sinkName(encoding), 1, Duration.ofSeconds(90));
        }

        for (int round = 0; round <= ROUNDS; round++) {
            if (round > 0) {
                timeline.run(TRANSACTIONS_PER_ROUND);
            }
            for (Map.Entry<String, String> e : TABLES.entrySet()) {
                timeline.awaitQuiescent(e.getValue(), SETTLE, QUIESCE_TIMEOUT);
            }
            System.out.println("TableJoinIT quiescent point " + round + ": " + timeline.oracle().size() + " view rows; "
                    + timeline.coverage());
        }

        List<Timeline.Row> upsert = timeline.target(TABLES.get("UPSERT"));
        List<Timeline.Row> retract = timeline.target(TABLES.get("RETRACT"));
        Timeline.assertSameRows("the RETRACT view's table against the UPSERT view's", upsert, retract);
        assertThat(upsert).as("a view with rows to compare").hasSizeGreaterThan(20);
        assertThat(timeline.coverage()).as("the workload's kinds of change")
                .contains("insert post", "edit body", "change author", "delete post", "follow", "unfollow");
        assertThat(timeline.writes(TABLES.get("RETRACT"))).as("the RETRACT table saw deletes and inserts of its -U/+U")
                .isGreaterThan(upsert.size());

        // Progress is reported: the view's records metric is the number of records its topic holds.
        long committed = timeline.producedPerKey(TABLES.get("UPSERT"), Duration.ofSeconds(60)).values().stream()
                .mapToLong(List::size).sum();
        try (WorkerJmx jmx = WorkerJmx.attach(worker.process())) {
            assertThat(jmx.pluginMetric(viewName("UPSERT"), 0, "view-records")).as("view-records").isEqualTo((double) committed);
            assertThat(jmx.pluginMetric(viewName("UPSERT"), 0, "view-source-changes")).as("view-source-changes")
                    .isGreaterThanOrEqualTo(90.0);
        }
    }

    @Test
    void appendIsRefusedForAViewThatCanUpdateNamingWhy() throws Exception {
        Timeline timeline = new Timeline(pipeline.postgres(), pipeline.broker(), "tj_append", 4, 1);
        timeline.createSource(1, 1);
        Map<String, String> values = timeline.placeholders(pipeline.work().resolve("secrets-append"),
                pipeline.work().resolve("replicas-append"));
        Map<String, String> config = timeline.viewConfig(values, "timeline_append", "APPEND", "timeline_append");

        JsonNode validation = worker.rest().validate(Timeline.VIEW_CONNECTOR_CLASS, config);
        assertThat(validation.path("error_count").asInt()).as("config/validate errors for APPEND").isPositive();
        String encodingErrors = errorsOf(validation, "view.encoding");
        assertThat(encodingErrors).as("view.encoding's errors").contains("APPEND").containsAnyOf("update", "delete");

        ConnectRest.Response put = worker.rest().put("connectors/timeline-append/config", config);
        assertThat(put.status()).as("PUT config of an APPEND view that can update: %s", put.raw()).isEqualTo(400);
        assertThat(put.raw()).contains("view.encoding").contains("APPEND");
        assertThat(worker.rest().status("timeline-append")).as("no connector was created").isEmpty();
    }

    private static String errorsOf(JsonNode validation, String key) {
        for (JsonNode c : validation.path("configs")) {
            if (c.path("value").path("name").asText().equals(key)) {
                return c.path("value").path("errors").toString();
            }
        }
        throw new AssertionError("config/validate did not report " + key + ": " + validation);
    }

    private static String viewName(String encoding) {
        return "timeline-view-" + encoding.toLowerCase();
    }

    private static String sinkName(String encoding) {
        return "timeline-sink-" + encoding.toLowerCase();
    }
}
