package io.asofconnect.sink;

import io.asofconnect.writer.testing.TargetDatabase;

import io.asofconnect.enrich.EnrichConfig;
import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.replica.ReplicaHandle;
import io.asofconnect.replica.ReplicaRegistry;
import io.asofconnect.sink.config.ExactlyOnceJdbcSinkConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The production path of the hosted enrichment: the task acquires a real replica (embedded Debezium reading
 * the same Postgres it writes to) from the worker's registry, holds records until the replica's watermark
 * passes their event time, and writes each with the row version valid then. The version boundaries are the
 * commit times Postgres recorded, probed a few milliseconds either side.
 */
class HostedEnrichmentWithReplicaTest {
    /** How far from a version boundary each probing event time lies: far enough that no rounding decides it. */
    private static final long PROBE_MS = 5;

    static TargetDatabase db;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDatabase() throws Exception {
        db = TargetDatabase.startWithLogicalDecoding();
        ExactlyOnceJdbcSinkTaskTest.db = db;
    }

    @AfterAll
    static void stopDatabase() throws Exception {
        db.close();
    }

    @Test
    void eachRecordIsWrittenWithTheVersionValidAtItsEventTime() throws Exception {
        db.execute("CREATE TABLE public.customers (id int PRIMARY KEY, name text NOT NULL)",
                "INSERT INTO public.customers VALUES (1, 'Alice')");
        String topic = "orders";
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props("hosted_sink");
        p.put(ExactlyOnceJdbcSinkConfig.SCHEMA_EVOLUTION, "BASIC");
        p.put(EnrichConfig.TABLE, "public.customers");
        p.put(EnrichConfig.KEY_FIELDS, "customer_id");
        p.put(EnrichConfig.OUTPUT_MODE, "FLATTEN");
        p.put(EnrichConfig.VERSION_METADATA, "false");
        p.put(EnrichConfig.LATENESS_WAIT_MS, "60000");
        p.put(ReplicaConfig.NAME, "hosted");
        p.put(ReplicaConfig.HOSTNAME, "127.0.0.1");
        p.put(ReplicaConfig.PORT, Integer.toString(db.port()));
        p.put(ReplicaConfig.USER, "postgres");
        p.put(ReplicaConfig.PASSWORD, "postgres");
        p.put(ReplicaConfig.DBNAME, "postgres");
        p.put(ReplicaConfig.TABLES, "public.customers");
        p.put(ReplicaConfig.SLOT_NAME, "hosted_slot");
        p.put(ReplicaConfig.PATH, dir.toString());
        p.put(ReplicaConfig.WATERMARK_INTERVAL_MS, "200");
        TopicPartition tp = new TopicPartition(topic, 0);
        NavigableMap<Long, String> validFrom = new TreeMap<>();
        List<String> expected = new ArrayList<>();
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            assertThat(ReplicaRegistry.references("hosted")).isEqualTo(1);
            // Let the initial snapshot finish first: snapshot rows count as valid since the beginning of time.
            try (ReplicaHandle shared = ReplicaRegistry.acquire(Map.of(ReplicaConfig.NAME, "hosted"))) {
                assertThat(shared.watermark().await(System.currentTimeMillis(), Duration.ofSeconds(60))).isTrue();
            }
            // Three versions after the snapshot's, each valid from its commit time as the database records it.
            for (String name : List.of("Alicia", "Alyssa", "Ali")) {
                db.execute("UPDATE public.customers SET name = '" + name + "' WHERE id = 1");
                validFrom.put(commitMillis(), name);
                // Versions well apart, so that the probes either side of one boundary never cross another.
                Thread.sleep(50);
            }
            // Two records per boundary, PROBE_MS before and after it: the version it ends, then the one it starts.
            List<SinkRecord> records = new ArrayList<>();
            String previous = "Alice";
            for (Map.Entry<Long, String> boundary : validFrom.entrySet()) {
                Long earlier = validFrom.lowerKey(boundary.getKey());
                if (earlier != null) {
                    assertThat(boundary.getKey() - earlier).as("boundaries further apart than their probes").isGreaterThan(2 * PROBE_MS);
                }
                expected.add(records.size() + ":" + previous);
                records.add(order(topic, records.size(), boundary.getKey() - PROBE_MS));
                expected.add(records.size() + ":" + boundary.getValue());
                records.add(order(topic, records.size(), boundary.getKey() + PROBE_MS));
                previous = boundary.getValue();
            }
            d.deliver(records);
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).until(() -> {
                d.deliver(List.of());
                return d.commit().getOrDefault(tp, -1L) == records.size();
            });
        }
        assertThat(ReplicaRegistry.references("hosted")).as("the task released the replica on stop").isZero();
        assertThat(db.column("SELECT id || ':' || customers_name FROM \"" + topic + "\" ORDER BY id"))
                .as("each order with the version valid at its event time, by the commit times in %s", validFrom)
                .containsExactlyElementsOf(expected);
    }

    /**
     * The commit time of the row's last change in whole milliseconds, as Debezium's {@code source.ts_ms} gives it
     * (the commit timestamp truncated): read from the database ({@code track_commit_timestamp=on}), not from this
     * JVM's clock, whose reading around the statement only brackets the commit. The row's {@code xmin} is the
     * transaction of the autocommitted UPDATE just run.
     */
    private static long commitMillis() throws Exception {
        long micros = db.scalar("SELECT (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint"
                + " FROM public.customers WHERE id = 1");
        return Math.floorDiv(micros, 1000L);
    }

    static SinkRecord order(String topic, long offset, long eventTime) {
        Struct v = new Struct(EnrichmentHostingTest.ORDER).put("id", offset).put("customer_id", 1L);
        return new SinkRecord(topic, 0, null, null, EnrichmentHostingTest.ORDER, v, offset, eventTime, TimestampType.CREATE_TIME);
    }
}
