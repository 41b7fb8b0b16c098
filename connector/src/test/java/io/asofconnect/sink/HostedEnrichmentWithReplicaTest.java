package io.asofconnect.sink;

import io.asofconnect.enrich.EnrichConfig;
import io.asofconnect.replica.ReplicaConfig;
import io.asofconnect.replica.ReplicaHandle;
import io.asofconnect.replica.ReplicaRegistry;
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
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The production path of the hosted enrichment: the task acquires a real replica (embedded Debezium reading
 * the same Postgres it writes to) from the worker's registry, holds records until the replica's watermark
 * passes their event time, and writes each with the row version valid then.
 */
class HostedEnrichmentWithReplicaTest {
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
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            assertThat(ReplicaRegistry.references("hosted")).isEqualTo(1);
            // Let the initial snapshot finish first: snapshot rows count as valid since the beginning of time.
            try (ReplicaHandle shared = ReplicaRegistry.acquire(Map.of(ReplicaConfig.NAME, "hosted"))) {
                assertThat(shared.awaitWatermark(System.currentTimeMillis(), Duration.ofSeconds(60))).isTrue();
            }
            long beforeUpdate = System.currentTimeMillis();
            db.execute("UPDATE public.customers SET name = 'Alicia' WHERE id = 1");
            long afterUpdate = System.currentTimeMillis() + 1;
            d.deliver(List.of(order(topic, 0, beforeUpdate), order(topic, 1, afterUpdate)));
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).until(() -> {
                d.deliver(List.of());
                return d.commit().getOrDefault(tp, -1L) == 2L;
            });
        }
        assertThat(ReplicaRegistry.references("hosted")).as("the task released the replica on stop").isZero();
        assertThat(db.column("SELECT id || ':' || customers_name FROM \"" + topic + "\" ORDER BY id")).containsExactly("0:Alice", "1:Alicia");
    }

    static SinkRecord order(String topic, long offset, long eventTime) {
        Struct v = new Struct(EnrichmentHostingTest.ORDER).put("id", offset).put("customer_id", 1L);
        return new SinkRecord(topic, 0, null, null, EnrichmentHostingTest.ORDER, v, offset, eventTime, TimestampType.CREATE_TIME);
    }
}
