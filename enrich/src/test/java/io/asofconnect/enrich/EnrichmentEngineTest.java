package io.asofconnect.enrich;

import io.asofconnect.enrich.EnrichOutcome.Dropped;
import io.asofconnect.enrich.EnrichOutcome.Enriched;
import io.asofconnect.enrich.EnrichOutcome.Failed;
import io.asofconnect.enrich.EnrichOutcome.NotYetVisible;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.testing.Waiter;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.asofconnect.enrich.Fixtures.CUSTOMERS;
import static io.asofconnect.enrich.Fixtures.customerV1;
import static io.asofconnect.enrich.Fixtures.customerV2;
import static io.asofconnect.enrich.Fixtures.order;
import static io.asofconnect.enrich.Fixtures.props;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The engine on schema'd (Struct) records, against a real MapDB version store. */
class EnrichmentEngineTest {
    @TempDir
    Path dir;
    TestReplica replica;
    Version alice1;
    Version alice2;

    @BeforeEach
    void setUp() {
        replica = new TestReplica(dir, CUSTOMERS, "public.order_lines");
        alice1 = replica.put(CUSTOMERS, RowKey.of(7), 1_000, customerV1(7, "Alice", "10.50"));
        alice2 = replica.put(CUSTOMERS, RowKey.of(7), 2_000, customerV1(7, "Alice B.", "20.00"));
        replica.commit(10_000);
    }

    @AfterEach
    void tearDown() {
        replica.close();
    }

    private EnrichmentEngine engine(String... extra) {
        return new EnrichmentEngine(new EnrichConfig(props(extra)), replica.lookup());
    }

    private static Struct nested(ConnectRecord<?> r) {
        return ((Struct) r.value()).getStruct("customers");
    }

    private static <R extends ConnectRecord<R>> R enriched(EnrichOutcome<R> o) {
        assertThat(o).isInstanceOf(Enriched.class);
        return ((Enriched<R>) o).record();
    }

    @Test
    void asOfPicksTheVersionValidAtTheEventTime() {
        EnrichmentEngine e = engine();
        assertThat(nested(enriched(e.tryEnrich(order(1, 7, 999))))).isNull();
        assertThat(nested(enriched(e.tryEnrich(order(1, 7, 1_000)))).getString("name")).isEqualTo("Alice");
        assertThat(nested(enriched(e.tryEnrich(order(1, 7, 1_999)))).getString("name")).isEqualTo("Alice");
        assertThat(nested(enriched(e.tryEnrich(order(1, 7, 2_000)))).getString("name")).isEqualTo("Alice B.");
        assertThat(nested(enriched(e.tryEnrich(order(1, 7, 10_000)))).get("credit")).isEqualTo(new BigDecimal("20.00"));
    }

    @Test
    void changesAtTheSameInstantResolveBySourceOrder() {
        replica.put(CUSTOMERS, RowKey.of(8), 3_000, customerV1(8, "first", "1.00"));
        replica.put(CUSTOMERS, RowKey.of(8), 3_000, customerV1(8, "second", "2.00"));
        replica.commit(10_000);
        assertThat(nested(enriched(engine().tryEnrich(order(1, 8, 3_000)))).getString("name")).isEqualTo("second");
    }

    @Test
    void aDeletedRowFollowsTheMissPolicy() {
        replica.delete(CUSTOMERS, RowKey.of(7), 3_000);
        replica.commit(10_000);
        assertThat(nested(enriched(engine().tryEnrich(order(1, 7, 3_000))))).isNull();
        assertThat(nested(enriched(engine().tryEnrich(order(1, 7, 2_999)))).getString("name")).isEqualTo("Alice B.");
        assertThat(engine(EnrichConfig.ON_MISS, "DROP").tryEnrich(order(1, 7, 3_000))).isInstanceOf(Dropped.class);
        assertThat(engine(EnrichConfig.ON_MISS, "DROP").enrichBlocking(order(1, 7, 3_000))).isNull();
        EnrichOutcome<SinkRecord> failed = engine(EnrichConfig.ON_MISS, "FAIL").tryEnrich(order(1, 7, 3_000));
        assertThat(failed).isInstanceOf(Failed.class);
        assertThat(((Failed<SinkRecord>) failed).reason()).hasMessageContaining(EnrichConfig.ON_MISS).hasMessageContaining(CUSTOMERS);
    }

    @Test
    void anEventPastTheWatermarkIsNotYetVisible() {
        EnrichOutcome<SinkRecord> o = engine().tryEnrich(order(1, 7, 10_001));
        assertThat(o).isEqualTo(new NotYetVisible<SinkRecord>(10_001, 10_000));
    }

    @Test
    void aRecordThatMustWaitTellsTheReplicaWhichWatermarkItWaitsFor() {
        EnrichmentEngine e = engine();
        e.tryEnrich(order(1, 7, 10_001));
        e.tryEnrich(order(2, 7, 9_000));
        assertThat(replica.wanted()).as("only the record past the watermark waits, for its own event time").containsExactly(10_001L);
    }

    @Test
    void enrichBlockingWaitsForTheWatermarkToPass() throws Exception {
        EnrichmentEngine e = engine(EnrichConfig.LATENESS_WAIT_MS, "20000");
        Waiter<SinkRecord> waiter = new Waiter<>(() -> e.enrichBlocking(order(1, 7, 12_000)));
        long parks = waiter.parkedAfter(0);
        // The version arrives while the transform waits: as-of must see it, since it is at or below the new watermark.
        replica.put(CUSTOMERS, RowKey.of(7), 11_000, customerV1(7, "Alice C.", "30.00"));
        replica.commit(11_500);
        waiter.parkedAfter(parks);
        assertThat(waiter.result).as("the watermark moved, not past the event time: still waiting").isNotDone();
        replica.commit(12_000);
        SinkRecord r = waiter.result.get(20, TimeUnit.SECONDS);
        assertThat(nested(r).getString("name")).isEqualTo("Alice C.");
        assertThat(r.headers().lastWithName(EnrichConfig.LATE_HEADER)).isNull();
    }

    @Test
    void enrichBlockingWaitsForTheReceiptAndThenForALaterEventTime() throws Exception {
        // The record reached the connector at 10,500 (read-your-writes bound) and carries event time 12,000: the
        // watermark must pass both, first the one, then the other, within one wait.
        replica.setSourceClock(10_500);
        EnrichmentEngine e = engine(EnrichConfig.LATENESS_WAIT_MS, "20000", EnrichConfig.STARTUP_WAIT_MS, "20000");
        Waiter<SinkRecord> waiter = new Waiter<>(() -> e.enrichBlocking(order(1, 7, 12_000)));
        long parks = waiter.parkedAfter(0);
        replica.commit(10_600);
        waiter.parkedAfter(parks);
        assertThat(waiter.result).as("past the receipt, not yet past the event time: still waiting, not late").isNotDone();
        replica.put(CUSTOMERS, RowKey.of(7), 11_000, customerV1(7, "Alice C.", "30.00"));
        replica.commit(12_000);
        SinkRecord r = waiter.result.get(20, TimeUnit.SECONDS);
        assertThat(nested(r).getString("name")).isEqualTo("Alice C.");
        assertThat(r.headers().lastWithName(EnrichConfig.LATE_HEADER)).isNull();
    }

    @Test
    void lateWithFailIsADataExceptionNamingTheWait() {
        EnrichmentEngine e = engine(EnrichConfig.LATENESS_WAIT_MS, "50");
        assertThatThrownBy(() -> e.enrichBlocking(order(1, 7, 20_000)))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(EnrichConfig.LATENESS_WAIT_MS + "=50")
                .hasMessageContaining(EnrichConfig.ON_LATE);
    }

    @Test
    void aReplicaStillOnItsFirstCatchUpGetsTheStartupWaitNotTheLatenessWait() throws Exception {
        // The task starts at 50,000 on the source clock; the replica's watermark (10,000) has not reached it yet.
        replica.setSourceClock(50_000);
        EnrichmentEngine e = engine(EnrichConfig.LATENESS_WAIT_MS, "50", EnrichConfig.STARTUP_WAIT_MS, "20000");
        assertThat(e.waitBoundMs()).isEqualTo(20_000);
        Waiter<SinkRecord> waiter = new Waiter<>(() -> e.enrichBlocking(order(1, 7, 20_000)));
        long parks = waiter.parkedAfter(0);
        // Not a wait for something to happen: the property is that the 50 ms lateness wait runs out while the record
        // waits on. It began before the park just seen, so it has run out well before this returns.
        Thread.sleep(100);
        // A watermark short of the record wakes it: a wait bounded by the lateness wait would give up now.
        replica.commit(15_000);
        waiter.parkedAfter(parks);
        assertThat(waiter.result).as("a snapshot still running is start-up, not a stall: no late answer after the lateness wait").isNotDone();
        replica.commit(50_000);
        assertThat(nested(waiter.result.get(20, TimeUnit.SECONDS)).getString("name")).isEqualTo("Alice B.");
        assertThat(e.waitBoundMs()).as("caught up once: stalls from now on get the lateness wait").isEqualTo(50);

        replica.setSourceClock(60_000);
        assertThatThrownBy(() -> e.enrichBlocking(order(2, 7, 55_000)))
                .isInstanceOf(DataException.class).hasMessageContaining(EnrichConfig.LATENESS_WAIT_MS + "=50");
    }

    @Test
    void aStartUpThatOutlastsTheStartupWaitFailsNamingIt() {
        replica.setSourceClock(50_000);
        EnrichmentEngine e = engine(EnrichConfig.LATENESS_WAIT_MS, "50", EnrichConfig.STARTUP_WAIT_MS, "300");
        long start = System.nanoTime();
        assertThatThrownBy(() -> e.enrichBlocking(order(1, 7, 20_000)))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(EnrichConfig.STARTUP_WAIT_MS + "=300")
                .hasMessageContaining("has not caught up since the task started");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
    }

    @Test
    void lateWithCurrentWithHeaderTakesTheCurrentRowAndSaysSo() {
        replica.put(CUSTOMERS, RowKey.of(7), 30_000, customerV1(7, "Alice future", "1.00"));
        replica.commit(10_000);
        EnrichmentEngine e = engine(EnrichConfig.LATENESS_WAIT_MS, "50", EnrichConfig.ON_LATE, "CURRENT_WITH_HEADER");
        SinkRecord r = e.enrichBlocking(order(1, 7, 20_000));
        assertThat(nested(r).getString("name")).isEqualTo("Alice future");
        assertThat(r.headers().lastWithName(EnrichConfig.LATE_HEADER).value()).isEqualTo("true");
        assertThat(r.headers().lastWithName(EnrichConfig.LATE_WATERMARK_HEADER).value()).isEqualTo(10_000L);
        assertThat(r.headers().lastWithName("trace").value()).isEqualTo("t-1");
        // The sink's path: no wait inside the engine, the late policy on request.
        assertThat(e.resolveLate(order(1, 7, 20_000))).isInstanceOf(Enriched.class);
    }

    @Test
    void beforeTheRetainedHistoryIsADataException() {
        replica.setHistoryStart(1_500);
        EnrichOutcome<SinkRecord> o = engine().tryEnrich(order(1, 7, 1_200));
        assertThat(o).isInstanceOf(Failed.class);
        assertThat(((Failed<SinkRecord>) o).reason()).hasMessageContaining("history start 1500").hasMessageContaining("retention");
        assertThatThrownBy(() -> engine().enrichBlocking(order(1, 7, 1_200))).isInstanceOf(DataException.class);
    }

    @Test
    void outputKeepsEverythingButTheValue() {
        SinkRecord in = order(1, 7, 1_500);
        SinkRecord out = engine().enrichBlocking(in);
        assertThat(out.topic()).isEqualTo(in.topic());
        assertThat(out.kafkaPartition()).isEqualTo(in.kafkaPartition());
        assertThat(out.kafkaOffset()).isEqualTo(in.kafkaOffset());
        assertThat(out.key()).isEqualTo(in.key());
        assertThat(out.keySchema()).isEqualTo(in.keySchema());
        assertThat(out.timestamp()).isEqualTo(in.timestamp());
        assertThat(out.headers()).isEqualTo(in.headers());
        Struct value = (Struct) out.value();
        assertThat(value.getStruct("after")).isEqualTo(((Struct) in.value()).getStruct("after"));
        assertThat(value.getString("op")).isEqualTo("c");
        assertThat(out.valueSchema().name()).isEqualTo(in.valueSchema().name());
        assertThat(out.valueSchema().isOptional()).isTrue();
    }

    @Test
    void theSameRecordAndReplicaStateGiveTheSameOutput() {
        SinkRecord a = engine().enrichBlocking(order(1, 7, 1_500));
        SinkRecord b = engine().enrichBlocking(order(1, 7, 1_500));
        assertThat(b.value()).isEqualTo(a.value());
        assertThat(b.valueSchema()).isEqualTo(a.valueSchema());
    }

    @Test
    void derivedSchemasAreCachedAndReused() {
        EnrichmentEngine e = engine();
        Schema first = e.enrichBlocking(order(1, 7, 1_500)).valueSchema();
        Schema second = e.enrichBlocking(order(2, 7, 1_600)).valueSchema();
        assertThat(second).isSameAs(first);
        e.close();
        assertThat(e.enrichBlocking(order(2, 7, 1_600)).valueSchema()).isNotSameAs(first).isEqualTo(first);
    }

    @Test
    void nestedOutputCarriesTypedOptionalColumnsAndVersionMetadata() {
        SinkRecord r = engine().enrichBlocking(order(1, 7, 1_500));
        Schema nestedSchema = r.valueSchema().field("customers").schema();
        assertThat(nestedSchema.isOptional()).isTrue();
        assertThat(nestedSchema.fields()).extracting(f -> f.name())
                .containsExactly("id", "name", "credit", "since", EnrichConfig.VALID_FROM_COLUMN, EnrichConfig.VERSION_COLUMN);
        assertThat(nestedSchema.fields()).allMatch(f -> f.schema().isOptional());
        assertThat(nestedSchema.field("credit").schema().name()).isEqualTo("org.apache.kafka.connect.data.Decimal");
        assertThat(nestedSchema.field("credit").schema().parameters()).containsEntry("scale", "2");
        assertThat(nestedSchema.field("since").schema().name()).isEqualTo("io.debezium.time.Date");
        Struct c = nested(r);
        assertThat(c.getInt32("id")).isEqualTo(7);
        assertThat(c.getInt64(EnrichConfig.VALID_FROM_COLUMN)).isEqualTo(1_000L);
        assertThat(c.getString(EnrichConfig.VERSION_COLUMN)).isEqualTo(alice1.id().toString());
    }

    @Test
    void versionMetadataCanBeTurnedOff() {
        SinkRecord r = engine(EnrichConfig.VERSION_METADATA, "false").enrichBlocking(order(1, 7, 1_500));
        assertThat(r.valueSchema().field("customers").schema().field(EnrichConfig.VERSION_COLUMN)).isNull();
    }

    @Test
    void flattenWritesPrefixedTopLevelFields() {
        SinkRecord r = engine(EnrichConfig.OUTPUT_MODE, "FLATTEN").enrichBlocking(order(1, 7, 2_500));
        Struct v = (Struct) r.value();
        assertThat(r.valueSchema().field("customers")).isNull();
        assertThat(v.getString("customers_name")).isEqualTo("Alice B.");
        assertThat(v.getString("customers_" + EnrichConfig.VERSION_COLUMN)).isEqualTo(alice2.id().toString());
        assertThat(r.valueSchema().field("customers_credit").schema().isOptional()).isTrue();

        SinkRecord custom = engine(EnrichConfig.OUTPUT_MODE, "FLATTEN", EnrichConfig.OUTPUT_PREFIX, "c_")
                .enrichBlocking(order(1, 7, 2_500));
        assertThat(((Struct) custom.value()).getString("c_name")).isEqualTo("Alice B.");

        SinkRecord miss = engine(EnrichConfig.OUTPUT_MODE, "FLATTEN").enrichBlocking(order(1, 99, 2_500));
        assertThat(((Struct) miss.value()).get("customers_" + EnrichConfig.VERSION_COLUMN)).isNull();
    }

    @Test
    void aColumnSubsetIsCopiedInItsOrder() {
        SinkRecord r = engine(EnrichConfig.COLUMNS, "credit,name", EnrichConfig.OUTPUT_FIELD, "customer")
                .enrichBlocking(order(1, 7, 1_500));
        Struct c = ((Struct) r.value()).getStruct("customer");
        assertThat(c.schema().fields()).extracting(f -> f.name())
                .containsExactly("credit", "name", EnrichConfig.VALID_FROM_COLUMN, EnrichConfig.VERSION_COLUMN);
        assertThat(c.getString("name")).isEqualTo("Alice");
    }

    @Test
    void aSchemaChangeOfTheTableGivesANewOutputSchema() {
        replica.put(CUSTOMERS, RowKey.of(7), 4_000, customerV2(7, "Alice", "20.00", "gold"));
        replica.commit(10_000);
        EnrichmentEngine e = engine(EnrichConfig.COLUMNS, "name,tier");
        SinkRecord old = e.enrichBlocking(order(1, 7, 3_000));
        SinkRecord changed = e.enrichBlocking(order(1, 7, 4_000));
        assertThat(changed.valueSchema()).isNotEqualTo(old.valueSchema());
        assertThat(nested(changed).getString("tier")).isEqualTo("gold");
        // The older shape has no tier: left out of the schema, so it reads as absent/null downstream.
        assertThat(nested(old).schema().field("tier")).isNull();
        assertThat(nested(old).getString("name")).isEqualTo("Alice B.");
    }

    @Test
    void aTombstonePassesThroughUnchanged() {
        SinkRecord tombstone = new SinkRecord(Fixtures.TOPIC, 0, Schema.INT64_SCHEMA, 1L, null, null, 5L);
        assertThat(engine().enrichBlocking(tombstone)).isSameAs(tombstone);
    }

    @Test
    void aMissingKeyFieldFollowsItsPolicy() {
        SinkRecord delete = Fixtures.orderDelete(1, 1_500);
        EnrichOutcome<SinkRecord> o = engine().tryEnrich(delete);
        assertThat(o).isInstanceOf(Failed.class);
        assertThat(((Failed<SinkRecord>) o).reason())
                .hasMessageContaining(EnrichConfig.KEY_FIELDS).hasMessageContaining("after.customer_id")
                .hasMessageContaining("null").hasMessageContaining(EnrichConfig.ON_MISSING_KEY);
        assertThat(engine(EnrichConfig.ON_MISSING_KEY, "PASS_THROUGH").enrichBlocking(delete)).isSameAs(delete);

        EnrichOutcome<SinkRecord> absentField = engine(EnrichConfig.KEY_FIELDS, "after.no_such_field").tryEnrich(order(1, 7, 1_500));
        assertThat(((Failed<SinkRecord>) absentField).reason()).hasMessageContaining("missing");
    }

    @Test
    void theKeyCanComeFromTheRecordKey() {
        Schema keySchema = org.apache.kafka.connect.data.SchemaBuilder.struct().field("cust", Schema.STRING_SCHEMA).build();
        SinkRecord in = order(1, 99, 1_500);
        SinkRecord keyed = in.newRecord(in.topic(), in.kafkaPartition(), keySchema, new Struct(keySchema).put("cust", "7"),
                in.valueSchema(), in.value(), in.timestamp());
        SinkRecord r = engine(EnrichConfig.KEY_SOURCE, "KEY", EnrichConfig.KEY_FIELDS, "cust").enrichBlocking(keyed);
        assertThat(nested(r).getString("name")).isEqualTo("Alice");

        SinkRecord primitiveKey = in.newRecord(in.topic(), in.kafkaPartition(), Schema.INT64_SCHEMA, 7L,
                in.valueSchema(), in.value(), in.timestamp());
        SinkRecord r2 = engine(EnrichConfig.KEY_SOURCE, "KEY", EnrichConfig.KEY_FIELDS, "").enrichBlocking(primitiveKey);
        assertThat(nested(r2).getString("name")).isEqualTo("Alice");
    }

    @Test
    void aCompositeKeyIsTakenInKeyColumnOrder() {
        Schema line = org.apache.kafka.connect.data.SchemaBuilder.struct().field("order_id", Schema.INT32_SCHEMA)
                .field("line_no", Schema.INT32_SCHEMA).field("sku", Schema.STRING_SCHEMA).build();
        replica.put("public.order_lines", RowKey.of(1, 2), 1_000, new Struct(line).put("order_id", 1).put("line_no", 2).put("sku", "A-2"));
        replica.put("public.order_lines", RowKey.of(2, 1), 1_000, new Struct(line).put("order_id", 2).put("line_no", 1).put("sku", "B-1"));
        replica.commit(10_000);
        Schema event = org.apache.kafka.connect.data.SchemaBuilder.struct().field("o", Schema.INT64_SCHEMA).field("l", Schema.INT64_SCHEMA).build();
        SinkRecord r = new SinkRecord("t", 0, null, null, event, new Struct(event).put("o", 1L).put("l", 2L), 0, 5_000L, null);
        EnrichmentEngine e = new EnrichmentEngine(new EnrichConfig(Map.of(EnrichConfig.TABLE, "public.order_lines",
                EnrichConfig.KEY_FIELDS, "o,l")), replica.lookup());
        assertThat(((Struct) e.enrichBlocking(r).value()).getStruct("order_lines").getString("sku")).isEqualTo("A-2");
    }

    // Read-your-writes: a record that reached the connector at R is answered only once the watermark passed R,
    // whatever its event time, so a change committed before R (even one valid from long before) is seen.

    @Test
    void aRecordIsHeldUntilTheWatermarkPassesTheTimeItWasReceived() {
        EnrichmentEngine e = engine();
        replica.setSourceClock(10_500);
        // Event time 5_000 is well below the watermark (10_000), but the record arrived at 10_500.
        assertThat(e.tryEnrich(order(1, 7, 5_000))).isEqualTo(new NotYetVisible<SinkRecord>(10_500, 10_000, true));
        assertThat(e.tryEnrich(order(1, 7, 5_000), 10_500)).isEqualTo(new NotYetVisible<SinkRecord>(10_500, 10_000, true));
        // A change committed at 10_200, before the record arrived, backdated to 3_000 (an application-time column).
        replica.put(CUSTOMERS, RowKey.of(7), 3_000, customerV1(7, "backdated", "1.00"));
        replica.commit(10_499);
        assertThat(e.tryEnrich(order(1, 7, 5_000), 10_500)).isInstanceOf(NotYetVisible.class);
        replica.commit(10_500);
        assertThat(nested(enriched(e.tryEnrich(order(1, 7, 5_000), 10_500))).getString("name")).isEqualTo("backdated");
    }

    @Test
    void aReceiptIsAnsweredOnceAProbeSentAfterItCameThroughWithoutWaitingForTheWatermark() {
        EnrichmentEngine e = engine();
        replica.setSourceClock(10_500);
        assertThat(e.tryEnrich(order(1, 7, 5_000), 10_500)).isEqualTo(new NotYetVisible<SinkRecord>(10_500, 10_000, true));
        assertThat(replica.receiptProbesWanted()).as("the held record asks for a probe").isPositive();
        assertThat(replica.wanted()).as("and not for the watermark to pass its receipt plus the margin").isEmpty();
        // Committed before the record arrived, backdated to 3_000; the watermark stays at 10_000 (its probe's stamp
        // less the margin), but a probe sent after the receipt (token 10_501) has come through.
        replica.put(CUSTOMERS, RowKey.of(7), 3_000, customerV1(7, "backdated", "1.00"));
        replica.commitProbe(10_500);
        assertThat(e.tryEnrich(order(1, 7, 5_000), 10_500)).as("a probe sent at the receipt itself may precede it")
                .isEqualTo(new NotYetVisible<SinkRecord>(10_500, 10_499, true));
        replica.commitProbe(10_501);
        assertThat(nested(enriched(e.tryEnrich(order(1, 7, 5_000), 10_500))).getString("name")).isEqualTo("backdated");
        assertThat(e.tryEnrich(order(1, 7, 10_200), 10_500)).as("an event time past the watermark still waits for the watermark")
                .isEqualTo(new NotYetVisible<SinkRecord>(10_200, 10_000, false));
    }

    @Test
    void currentAndVersionModesWaitForTheTimeTheRecordWasReceivedToo() {
        replica.setSourceClock(10_500);
        EnrichmentEngine current = engine(EnrichConfig.MODE, "CURRENT");
        assertThat(current.tryEnrich(order(1, 7, 1_500))).isEqualTo(new NotYetVisible<SinkRecord>(10_500, 10_000, true));
        Schema event = org.apache.kafka.connect.data.SchemaBuilder.struct().field("cid", Schema.INT32_SCHEMA)
                .field("v", Schema.STRING_SCHEMA).build();
        EnrichmentEngine version = new EnrichmentEngine(new EnrichConfig(Map.of(EnrichConfig.TABLE, CUSTOMERS,
                EnrichConfig.KEY_FIELDS, "cid", EnrichConfig.MODE, "VERSION", EnrichConfig.VERSION_FIELD, "v")), replica.lookup());
        SinkRecord named = new SinkRecord("t", 0, null, null, event, new Struct(event).put("cid", 7).put("v", alice1.id().toString()), 0);
        assertThat(version.tryEnrich(named)).isEqualTo(new NotYetVisible<SinkRecord>(10_500, 10_000, true));

        replica.put(CUSTOMERS, RowKey.of(7), 10_300, customerV1(7, "committed before the record", "2.00"));
        replica.commit(10_600);
        assertThat(nested(enriched(current.tryEnrich(order(1, 7, 1_500), 10_500))).getString("name"))
                .isEqualTo("committed before the record");
        assertThat(((Struct) enriched(version.tryEnrich(named, 10_500)).value()).getStruct("customers").getString("name"))
                .isEqualTo("Alice");
    }

    @Test
    void aBrokerTimestampUnderLogAppendTimeLaterThanTheReceiptIsTheBound() {
        EnrichmentEngine e = engine();
        SinkRecord base = order(1, 7, 5_000);
        SinkRecord appended = new SinkRecord(base.topic(), base.kafkaPartition(), base.keySchema(), base.key(), base.valueSchema(),
                base.value(), base.kafkaOffset(), 10_700L, TimestampType.LOG_APPEND_TIME, base.headers());
        assertThat(e.tryEnrich(appended, 10_500)).isEqualTo(new NotYetVisible<SinkRecord>(10_700, 10_000, true));
        // Under CreateTime the timestamp is the producer's (here an event time) and says nothing of the receipt.
        SinkRecord created = new SinkRecord(base.topic(), base.kafkaPartition(), base.keySchema(), base.key(), base.valueSchema(),
                base.value(), base.kafkaOffset(), 10_700L, TimestampType.CREATE_TIME, base.headers());
        assertThat(e.tryEnrich(created, 10_500)).isEqualTo(new NotYetVisible<SinkRecord>(10_500, 10_000, true));
    }

    @Test
    void aReceiptTheWatermarkDidNotPassInTimeFollowsTheLatePolicy() {
        EnrichmentEngine started = engine();
        // The clock moves on after the task started (and the replica caught up with it): a stall, not start-up.
        replica.setSourceClock(10_500);
        EnrichOutcome<SinkRecord> failed = started.resolveLate(order(1, 7, 5_000), 10_500);
        assertThat(((Failed<SinkRecord>) failed).reason()).hasMessageContaining("reached the connector")
                .hasMessageContaining(EnrichConfig.LATENESS_WAIT_MS);
        SinkRecord r = enriched(engine(EnrichConfig.ON_LATE, "CURRENT_WITH_HEADER").resolveLate(order(1, 7, 5_000), 10_500));
        assertThat(nested(r).getString("name")).isEqualTo("Alice B.");
        assertThat(r.headers().lastWithName(EnrichConfig.LATE_HEADER).value()).isEqualTo("true");
    }

    @Test
    void readYourWritesOffAnswersFromWhatTheReplicaHasApplied() {
        replica.setSourceClock(10_500);
        EnrichmentEngine e = engine(EnrichConfig.READ_YOUR_WRITES, "false");
        assertThat(nested(enriched(e.tryEnrich(order(1, 7, 5_000)))).getString("name")).isEqualTo("Alice B.");
        assertThat(e.receipts().now()).isEqualTo(ReceiptTimes.NONE);
    }

    @Test
    void currentModeTakesTheNewestVersionWithoutWaiting() {
        replica.put(CUSTOMERS, RowKey.of(7), 50_000, customerV1(7, "newest", "0.00"));
        replica.commit(10_000);
        SinkRecord r = engine(EnrichConfig.MODE, "CURRENT").enrichBlocking(order(1, 7, 1_500));
        assertThat(nested(r).getString("name")).isEqualTo("newest");
    }

    @Test
    void versionModeTakesTheNamedVersion() {
        Schema event = org.apache.kafka.connect.data.SchemaBuilder.struct().field("cid", Schema.INT32_SCHEMA)
                .field("v", Schema.STRING_SCHEMA).build();
        EnrichmentEngine e = new EnrichmentEngine(new EnrichConfig(Map.of(EnrichConfig.TABLE, CUSTOMERS,
                EnrichConfig.KEY_FIELDS, "cid", EnrichConfig.MODE, "VERSION", EnrichConfig.VERSION_FIELD, "v")), replica.lookup());
        SinkRecord r = new SinkRecord("t", 0, null, null, event, new Struct(event).put("cid", 7).put("v", alice1.id().toString()), 0);
        assertThat(((Struct) e.enrichBlocking(r).value()).getStruct("customers").getString("name")).isEqualTo("Alice");

        String future = "20000@" + alice1.position();
        SinkRecord ahead = new SinkRecord("t", 0, null, null, event, new Struct(event).put("cid", 7).put("v", future), 0);
        assertThat(e.tryEnrich(ahead)).isInstanceOf(NotYetVisible.class);

        SinkRecord garbage = new SinkRecord("t", 0, null, null, event, new Struct(event).put("cid", 7).put("v", "nope"), 0);
        assertThat(((Failed<SinkRecord>) e.tryEnrich(garbage)).reason()).hasMessageContaining(EnrichConfig.VERSION_FIELD);
    }

    @Test
    void aValueThatIsNeitherStructNorMapFailsNamingTheType() {
        SinkRecord r = new SinkRecord("t", 0, null, null, Schema.STRING_SCHEMA, "secret-value", 0);
        EnrichOutcome<SinkRecord> o = engine().tryEnrich(r);
        assertThat(((Failed<SinkRecord>) o).reason()).hasMessageContaining("STRING").hasMessageNotContaining("secret-value");
    }

    @Test
    void aFieldCollisionFailsNamingTheOption() {
        EnrichOutcome<SinkRecord> o = engine(EnrichConfig.OUTPUT_FIELD, "after").tryEnrich(order(1, 7, 1_500));
        assertThat(((Failed<SinkRecord>) o).reason()).hasMessageContaining(EnrichConfig.OUTPUT_FIELD).hasMessageContaining("after");
    }

    @Test
    void messagesNeverCarryRecordValues() {
        EnrichOutcome<SinkRecord> o = engine(EnrichConfig.ON_MISS, "FAIL").tryEnrich(order(4242, 98765, 1_500));
        assertThat(((Failed<SinkRecord>) o).reason().getMessage()).doesNotContain("98765").doesNotContain("4242");
    }

    @Test
    void anUncapturedTableIsRejectedAtConstruction() {
        assertThatThrownBy(() -> new EnrichmentEngine(new EnrichConfig(props(EnrichConfig.TABLE, "public.nope")), replica.lookup()))
                .isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.TABLE).hasMessageContaining(CUSTOMERS);
    }

    @Test
    void awaitIsBoundedEvenWhenTheReplicaIsStopped() {
        EnrichmentEngine e = engine(EnrichConfig.LATENESS_WAIT_MS, "100");
        long start = System.nanoTime();
        assertThatThrownBy(() -> e.enrichBlocking(order(1, 7, 99_000))).isInstanceOf(DataException.class);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    }

    @Test
    void aStalledReplicaCostsOneBoundPerStallNotOnePerRecord() throws Exception {
        long bound = 300;
        EnrichmentEngine e = engine(EnrichConfig.LATENESS_WAIT_MS, Long.toString(bound),
                EnrichConfig.ON_LATE, "CURRENT_WITH_HEADER");
        long start = System.nanoTime();
        for (int i = 0; i < 50; i++) {
            SinkRecord r = e.enrichBlocking(order(i, 7, 20_000 + i));
            assertThat(r.headers().lastWithName(EnrichConfig.LATE_HEADER).value()).isEqualTo("true");
        }
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        // 50 waits would take 15 s; one wait plus 50 lookups takes well under 3 s even on a loaded machine.
        assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(bound)).isLessThan(Duration.ofSeconds(3));

        // While lagging, a record at or below the watermark is answered as always, not late.
        assertThat(e.enrichBlocking(order(1, 7, 1_500)).headers().lastWithName(EnrichConfig.LATE_HEADER)).isNull();

        // The watermark passes the event time that timed out: the next late record is waited for again.
        replica.commit(25_000);
        long again = System.nanoTime();
        assertThat(e.enrichBlocking(order(99, 7, 30_000)).headers().lastWithName(EnrichConfig.LATE_HEADER)).isNotNull();
        assertThat(Duration.ofNanos(System.nanoTime() - again)).isGreaterThanOrEqualTo(Duration.ofMillis(bound));
    }

    @Test
    void theLagIsRememberedAcrossThreads() throws Exception {
        EnrichmentEngine e = engine(EnrichConfig.LATENESS_WAIT_MS, "300");
        long start = System.nanoTime();
        java.util.List<CompletableFuture<Void>> workers = new java.util.ArrayList<>();
        for (int t = 0; t < 4; t++) {
            int base = t * 100;
            workers.add(CompletableFuture.runAsync(() -> {
                for (int i = 0; i < 20; i++) {
                    int n = base + i;
                    assertThatThrownBy(() -> e.enrichBlocking(order(n, 7, 20_000 + n))).isInstanceOf(DataException.class);
                }
            }));
        }
        CompletableFuture.allOf(workers.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        // At most one wait per thread that started waiting before the first timed out; never 80.
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    }

    @Test
    void versionModeWaitsForTheWatermarkEvenWhenTheStoreAlreadyHoldsTheVersion() {
        // The capture thread has written the version, but the watermark has not passed its valid-from yet.
        Version ahead = replica.put(CUSTOMERS, RowKey.of(7), 20_000, customerV1(7, "Alice ahead", "1.00"));
        replica.commit(10_000);
        Schema event = org.apache.kafka.connect.data.SchemaBuilder.struct().field("cid", Schema.INT32_SCHEMA)
                .field("v", Schema.STRING_SCHEMA).build();
        EnrichmentEngine e = new EnrichmentEngine(new EnrichConfig(Map.of(EnrichConfig.TABLE, CUSTOMERS,
                EnrichConfig.KEY_FIELDS, "cid", EnrichConfig.MODE, "VERSION", EnrichConfig.VERSION_FIELD, "v",
                EnrichConfig.LATENESS_WAIT_MS, "50")), replica.lookup());
        SinkRecord r = new SinkRecord("t", 0, null, null, event, new Struct(event).put("cid", 7).put("v", ahead.id().toString()), 0);
        assertThat(e.tryEnrich(r)).isEqualTo(new NotYetVisible<SinkRecord>(20_000, 10_000));
        assertThat(e.resolveLate(r)).isInstanceOf(Failed.class);

        replica.commit(20_000);
        assertThat(((Struct) e.enrichBlocking(r).value()).getStruct("customers").getString("name")).isEqualTo("Alice ahead");
    }

    @Test
    void aMissBeforeAnyHitCarriesOnlyTheVersionMetadataShape() {
        SinkRecord miss = engine().enrichBlocking(order(1, 99, 1_500));
        assertThat(nested(miss)).isNull();
        assertThat(miss.valueSchema().field("customers").schema().fields()).extracting(f -> f.name())
                .containsExactly(EnrichConfig.VALID_FROM_COLUMN, EnrichConfig.VERSION_COLUMN);
    }

    @Test
    void aMissAfterAHitHasTheHitsOutputSchema() {
        EnrichmentEngine e = engine();
        SinkRecord hit = e.enrichBlocking(order(1, 7, 1_500));
        SinkRecord miss = e.enrichBlocking(order(2, 99, 1_500));
        assertThat(miss.valueSchema()).isSameAs(hit.valueSchema());
        assertThat(nested(miss)).isNull();
        ((Struct) miss.value()).validate();

        EnrichmentEngine flat = engine(EnrichConfig.OUTPUT_MODE, "FLATTEN");
        SinkRecord flatHit = flat.enrichBlocking(order(1, 7, 1_500));
        SinkRecord flatMiss = flat.enrichBlocking(order(2, 99, 1_500));
        assertThat(flatMiss.valueSchema()).isSameAs(flatHit.valueSchema());
        Struct v = (Struct) flatMiss.value();
        assertThat(v.get("customers_name")).isNull();
        assertThat(v.get("customers_credit")).isNull();
        assertThat(v.get("customers_" + EnrichConfig.VERSION_COLUMN)).isNull();

        // The table's shape changes: misses follow the newest shape seen.
        replica.put(CUSTOMERS, RowKey.of(7), 4_000, customerV2(7, "Alice", "20.00", "gold"));
        replica.commit(10_000);
        SinkRecord newer = e.enrichBlocking(order(3, 7, 4_000));
        assertThat(e.enrichBlocking(order(4, 99, 4_000)).valueSchema()).isSameAs(newer.valueSchema())
                .isNotEqualTo(hit.valueSchema());
    }
}
