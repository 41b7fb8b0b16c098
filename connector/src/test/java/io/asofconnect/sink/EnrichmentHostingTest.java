package io.asofconnect.sink;

import io.asofconnect.writer.testing.TargetDatabase;

import io.asofconnect.enrich.EnrichConfig;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.sink.config.ExactlyOnceJdbcSinkConfig;
import io.asofconnect.enrich.ReplicaLease;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.replica.StoreBackedLookup;
import io.asofconnect.store.StoreOptions;
import io.asofconnect.replica.watermark.WatermarkTracker;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The sink hosting the enrichment, against a real version store fed by hand (as the capture thread feeds
 * it) and a real target Postgres: records ahead of the watermark are held in order, the partition is
 * paused at the bound and resumed, dropped and failed records still move the offset.
 */
class EnrichmentHostingTest {
    static final String CUSTOMERS = "public.customers";
    static final Schema CUSTOMER = SchemaBuilder.struct().name("customers.Value")
            .field("id", Schema.INT32_SCHEMA).field("name", Schema.OPTIONAL_STRING_SCHEMA).build();
    static final Schema ORDER = SchemaBuilder.struct().name("orders.Value")
            .field("id", Schema.INT64_SCHEMA).field("customer_id", Schema.OPTIONAL_INT64_SCHEMA).build();

    static TargetDatabase db;

    @TempDir
    Path dir;
    MapDbVersionStore store;
    WatermarkTracker watermark;
    /** The source database's clock, on which the sink receives records (read-your-writes); below every watermark here unless a test moves it. */
    final AtomicLong sourceClock = new AtomicLong(0);
    int releases;

    @BeforeAll
    static void startDatabase() throws Exception {
        db = TargetDatabase.start();
        ExactlyOnceJdbcSinkTaskTest.db = db;
    }

    @AfterAll
    static void stopDatabase() throws Exception {
        db.close();
    }

    @BeforeEach
    void replica() {
        store = MapDbVersionStore.open(dir.resolve("replica.db"), StoreOptions.defaults());
        watermark = new WatermarkTracker(Long.MIN_VALUE, sourceClock::get);
        put(1, "Alice", 1_000);
        put(1, "Alicia", 5_000);
        commit(3_000);
    }

    @AfterEach
    void closeReplica() {
        watermark.wakeAll();
        store.close();
    }

    private long lsn = 0x100;

    void put(int id, String name, long validFrom) {
        store.put(CUSTOMERS, RowKey.of(id), new Version(validFrom, new SourcePosition(lsn++, 0), new Struct(CUSTOMER).put("id", id).put("name", name)));
    }

    void commit(long w) {
        store.setWatermark(w);
        store.commit();
        watermark.advanceTo(w);
    }

    SinkDriver sink(Map<String, String> props, CollectingReporterHolder reporter) {
        ExactlyOnceJdbcSinkTask task = new ExactlyOnceJdbcSinkTask(p -> ReplicaLease.of(
                new StoreBackedLookup(store, watermark, Set.of(CUSTOMERS)), () -> releases++));
        return new SinkDriver(task, props, reporter == null ? null : reporter.reporter);
    }

    record CollectingReporterHolder(ExactlyOnceJdbcSinkTaskTest.CollectingReporter reporter) {
    }

    Map<String, String> props(String name) {
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(name);
        p.put(ExactlyOnceJdbcSinkConfig.SCHEMA_EVOLUTION, "BASIC");
        p.put(ExactlyOnceJdbcSinkConfig.BUFFER_MAX_RECORDS, "2");
        p.put(EnrichConfig.TABLE, CUSTOMERS);
        p.put(EnrichConfig.KEY_FIELDS, "customer_id");
        p.put(EnrichConfig.OUTPUT_MODE, "FLATTEN");
        p.put(EnrichConfig.VERSION_METADATA, "false");
        p.put(EnrichConfig.ON_MISS, "DROP");
        p.put(EnrichConfig.LATENESS_WAIT_MS, "60000");
        p.put("replica.name", "test-replica");
        return p;
    }

    static SinkRecord order(String topic, long offset, Long customer, long eventTime) {
        Struct v = new Struct(ORDER).put("id", offset).put("customer_id", customer);
        return new SinkRecord(topic, 0, null, null, ORDER, v, offset, eventTime, TimestampType.CREATE_TIME);
    }

    @Test
    void recordsAheadOfTheWatermarkWaitInOrderWithThePartitionPausedAtTheBound() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("orders");
        Map<String, String> p = props(ExactlyOnceJdbcSinkTaskTest.unique("enrich_sink"));
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = sink(p, null).open(tp)) {
            d.deliver(List.of(order(topic, 0, 1L, 2_000), order(topic, 1, 1L, 6_000), order(topic, 2, 1L, 2_500)));
            assertThat(d.context.paused).containsExactly(tp);
            assertThat(d.context.calls).as("the task asks to be called again soon").contains("timeout 100");
            assertThat(d.commit()).as("only the record before the first one held").containsEntry(tp, 1L);

            d.deliver(List.of());
            assertThat(d.context.paused).as("still nothing visible past the watermark").containsExactly(tp);

            put(1, "Ally", 8_000);
            commit(7_000);
            d.deliver(List.of());
            assertThat(d.context.paused).isEmpty();
            assertThat(d.context.calls).containsSubsequence("pause [" + tp + "]", "resume [" + tp + "]");
            d.deliver(List.of(order(topic, 3, 99L, 2_000)));
            assertThat(d.commit()).as("the dropped record's offset advances too").containsEntry(tp, 4L);
        }
        assertThat(db.column("SELECT id || ':' || customers_name FROM \"" + topic + "\" ORDER BY id"))
                .containsExactly("0:Alice", "1:Alicia", "2:Alice");
        assertThat(releases).isEqualTo(1);
    }

    @Test
    void aRecordIsHeldUntilTheReplicaHasAppliedWhatWasCommittedBeforeItArrived() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("orders_ryw");
        Map<String, String> p = props(ExactlyOnceJdbcSinkTaskTest.unique("enrich_ryw_sink"));
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = sink(p, null).open(tp)) {
            // Event time 2_000 lies below the watermark (3_000), but the records reach the task at 3_500 on the
            // source's clock: a change committed at 3_200, backdated to 1_500, may not have been applied yet.
            sourceClock.set(3_500);
            d.deliver(List.of(order(topic, 0, 1L, 2_000), order(topic, 1, 1L, 2_000)));
            assertThat(d.commit()).as("nothing is answered before the watermark passes the receipt").doesNotContainKey(tp);
            assertThat(d.context.paused).as("held up to the bound, as records ahead of the watermark are").containsExactly(tp);
            assertThat(d.context.metric("enrich-held-records")).isEqualTo(2);
            assertThat(d.context.metric("enrich-hits-total")).isZero();
            put(1, "Backdated", 1_500);
            commit(3_499);
            sourceClock.set(9_000);
            d.deliver(List.of());
            assertThat(d.commit()).doesNotContainKey(tp);
            commit(3_500);
            d.deliver(List.of());
            assertThat(d.commit()).as("held records keep the time they arrived, not the time they are asked again")
                    .containsEntry(tp, 2L);
            assertThat(d.context.metric("enrich-held-records")).isZero();
            assertThat(d.context.metric("enrich-hits-total")).isEqualTo(2);
            assertThat(d.context.metric("enrich-misses-total")).isZero();
            assertThat(d.context.metric("enrich-hold-time-ms-max")).isPositive();
            assertThat(d.context.metric("enrich-late-records-total")).isZero();
        }
        assertThat(db.column("SELECT id || ':' || customers_name FROM \"" + topic + "\" ORDER BY id"))
                .containsExactly("0:Backdated", "1:Backdated");
    }

    @Test
    void recordsHeldThroughTheReplicasStartUpGetTheStartupWait() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("orders_startup");
        Map<String, String> p = props(ExactlyOnceJdbcSinkTaskTest.unique("enrich_startup_sink"));
        p.put(EnrichConfig.LATENESS_WAIT_MS, "100");
        p.put(EnrichConfig.STARTUP_WAIT_MS, "60000");
        TopicPartition tp = new TopicPartition(topic, 0);
        // The task starts at 10,000 on the source clock; the replica's watermark (3,000) is still far behind it:
        // an initial snapshot or a catch-up after a restart, which outlasts the 100 ms a stall is given.
        sourceClock.set(10_000);
        try (SinkDriver d = sink(p, null).open(tp)) {
            d.deliver(List.of(order(topic, 0, 1L, 2_000), order(topic, 1, 1L, 6_000)));
            Thread.sleep(400);
            d.deliver(List.of());
            assertThat(d.context.metric("enrich-late-records-total")).as("start-up is not a stall").isZero();
            assertThat(d.context.metric("enrich-held-records")).isEqualTo(2);
            assertThat(d.commit()).doesNotContainKey(tp);
            commit(10_000);
            d.deliver(List.of());
            assertThat(d.commit()).containsEntry(tp, 2L);
            assertThat(d.context.metric("enrich-late-records-total")).isZero();
        }
        assertThat(db.column("SELECT id || ':' || customers_name FROM \"" + topic + "\" ORDER BY id"))
                .containsExactly("0:Alice", "1:Alicia");
    }

    @Test
    void aPartitionPausedWhenItWasClosedIsResumedWhenItIsAssignedAgain() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("orders_rebalance");
        Map<String, String> p = props(ExactlyOnceJdbcSinkTaskTest.unique("enrich_rebalance_sink"));
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = sink(p, null).open(tp)) {
            d.deliver(List.of(order(topic, 0, 1L, 6_000), order(topic, 1, 1L, 6_500)));
            assertThat(d.context.paused).containsExactly(tp);
            // Connect keeps the paused set over a rebalance and pauses the partition again when it comes back.
            d.task.close(List.of(tp));
            d.open(tp);
            assertThat(d.context.paused).as("resumed on open: its new state knows nothing of the pause").isEmpty();
            assertThat(d.context.calls).containsSubsequence("pause [" + tp + "]", "resume [" + tp + "]");

            put(1, "Ally", 8_000);
            commit(7_000);
            d.deliver(List.of(order(topic, 0, 1L, 6_000), order(topic, 1, 1L, 6_500)));
            assertThat(d.commit()).containsEntry(tp, 2L);
            assertThat(d.context.paused).isEmpty();
        }
        assertThat(db.column("SELECT id || ':' || customers_name FROM \"" + topic + "\" ORDER BY id"))
                .containsExactly("0:Alicia", "1:Alicia");
    }

    @Test
    void aRecordTheEngineCannotEnrichIsReportedOrStopsTheTask() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("orders_bad");
        Map<String, String> p = props(ExactlyOnceJdbcSinkTaskTest.unique("enrich_bad_sink"));
        TopicPartition tp = new TopicPartition(topic, 0);
        ExactlyOnceJdbcSinkTaskTest.CollectingReporter reporter = new ExactlyOnceJdbcSinkTaskTest.CollectingReporter(p.get("name"));
        try (SinkDriver d = sink(p, new CollectingReporterHolder(reporter)).open(tp)) {
            d.deliver(List.of(order(topic, 0, 1L, 2_000), order(topic, 1, null, 2_000), order(topic, 2, 1L, 2_000)));
            assertThat(d.commit()).containsEntry(tp, 3L);
        }
        assertThat(reporter.records).extracting(SinkRecord::kafkaOffset).containsExactly(1L);
        assertThat(reporter.nextOffsetAtReport).allMatch(o -> o <= 1L);
        assertThat(db.column("SELECT id FROM \"" + topic + "\" ORDER BY id")).containsExactly("0", "2");

        String topic2 = ExactlyOnceJdbcSinkTaskTest.unique("orders_bad");
        TopicPartition tp2 = new TopicPartition(topic2, 0);
        try (SinkDriver d = sink(props(ExactlyOnceJdbcSinkTaskTest.unique("enrich_none_sink")), null).open(tp2)) {
            assertThatThrownBy(() -> d.deliver(List.of(order(topic2, 0, 1L, 2_000), order(topic2, 1, null, 2_000))))
                    .isInstanceOf(ConnectException.class)
                    .hasMessageContaining("the record at " + topic2 + "-0@1 cannot be written");
            assertThat(d.commit()).doesNotContainKey(tp2);
        }
    }
}
