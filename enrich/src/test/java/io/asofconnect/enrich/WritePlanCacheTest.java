package io.asofconnect.enrich;

import io.asofconnect.common.lookup.RowKey;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.math.BigDecimal;
import java.nio.file.Path;

import static io.asofconnect.enrich.Fixtures.CUSTOMERS;
import static io.asofconnect.enrich.Fixtures.ENVELOPE;
import static io.asofconnect.enrich.Fixtures.ORDER_ROW;
import static io.asofconnect.enrich.Fixtures.SOURCE;
import static io.asofconnect.enrich.Fixtures.customerV1;
import static io.asofconnect.enrich.Fixtures.customerV2;
import static io.asofconnect.enrich.Fixtures.order;
import static io.asofconnect.enrich.Fixtures.props;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The write plans are cached per (input schema, row schema) pair: a record whose input or row shape differs
 * from the previous record's gets a plan of its own, also when two shapes alternate record by record, and
 * every output validates against its schema.
 */
class WritePlanCacheTest {
    /** The orders envelope after the producer added a field. */
    static final Schema ENVELOPE_WITH_CHANNEL = SchemaBuilder.struct().name("pg.public.orders.Envelope").optional()
            .field("before", ORDER_ROW)
            .field("after", ORDER_ROW)
            .field("source", SOURCE)
            .field("op", Schema.STRING_SCHEMA)
            .field("channel", Schema.OPTIONAL_STRING_SCHEMA)
            .build();

    @TempDir
    Path dir;
    TestReplica replica;

    @BeforeEach
    void setUp() {
        replica = new TestReplica(dir, CUSTOMERS);
        replica.put(CUSTOMERS, RowKey.of(7), 1_000, customerV1(7, "Alice", "10.50"));
        // ALTER TABLE customers ADD COLUMN tier: the newer version has another row schema.
        replica.put(CUSTOMERS, RowKey.of(7), 3_000, customerV2(7, "Alice B.", "20.00", "gold"));
        replica.commit(10_000);
    }

    @AfterEach
    void tearDown() {
        replica.close();
    }

    private EnrichmentEngine engine(String... extra) {
        return new EnrichmentEngine(new EnrichConfig(props(extra)), replica.lookup());
    }

    private static SinkRecord orderWithChannel(long orderId, long customerId, long tsMs) {
        Struct after = new Struct(ORDER_ROW).put("id", orderId).put("customer_id", customerId);
        Struct value = new Struct(ENVELOPE_WITH_CHANNEL).put("after", after)
                .put("source", new Struct(SOURCE).put("ts_ms", tsMs)).put("op", "c").put("channel", "web");
        return new SinkRecord(Fixtures.TOPIC, 1, Schema.INT64_SCHEMA, orderId, ENVELOPE_WITH_CHANNEL, value, 77L, tsMs + 5, null);
    }

    private static Struct validated(SinkRecord r) {
        Struct v = (Struct) r.value();
        v.validate();
        assertThat(v.schema()).isSameAs(r.valueSchema());
        return v;
    }

    @Test
    void rowShapesAlternatingEachGetTheirOwnOutputShape() {
        EnrichmentEngine e = engine();
        Schema oldShape = null;
        Schema newShape = null;
        for (int i = 0; i < 4; i++) {
            Struct before = validated(e.enrichBlocking(order(i, 7, 1_500)));
            Struct nestedBefore = before.getStruct("customers");
            assertThat(nestedBefore.schema().field("tier")).isNull();
            assertThat(nestedBefore.getString("name")).isEqualTo("Alice");
            assertThat(nestedBefore.get("credit")).isEqualTo(new BigDecimal("10.50"));

            Struct after = validated(e.enrichBlocking(order(i, 7, 3_500)));
            Struct nestedAfter = after.getStruct("customers");
            assertThat(nestedAfter.getString("tier")).isEqualTo("gold");
            assertThat(nestedAfter.getString("name")).isEqualTo("Alice B.");
            assertThat(nestedAfter.getInt64(EnrichConfig.VALID_FROM_COLUMN)).isEqualTo(3_000L);

            // The same pair keeps handing out the same output schema instance.
            if (i == 0) {
                oldShape = before.schema();
                newShape = after.schema();
            }
            assertThat(before.schema()).isSameAs(oldShape);
            assertThat(after.schema()).isSameAs(newShape);
        }
        assertThat(newShape).isNotEqualTo(oldShape);
    }

    @Test
    void inputShapesAlternatingEachKeepTheirOwnFields() {
        EnrichmentEngine e = engine();
        for (int i = 0; i < 4; i++) {
            Struct plain = validated(e.enrichBlocking(order(i, 7, 1_500)));
            assertThat(plain.schema().field("channel")).isNull();
            assertThat(plain.getString("op")).isEqualTo("c");
            assertThat(plain.getStruct("customers").getString("name")).isEqualTo("Alice");

            Struct withChannel = validated(e.enrichBlocking(orderWithChannel(i, 7, 1_500)));
            assertThat(withChannel.getString("channel")).isEqualTo("web");
            assertThat(withChannel.getStruct("after").getInt64("id")).isEqualTo((long) i);
            assertThat(withChannel.getStruct("customers").getString("name")).isEqualTo("Alice");
        }
    }

    @Test
    void flattenedOutputFollowsBothShapesToo() {
        EnrichmentEngine e = engine(EnrichConfig.OUTPUT_MODE, "FLATTEN");
        for (int i = 0; i < 3; i++) {
            Struct old = validated(e.enrichBlocking(order(i, 7, 1_500)));
            assertThat(old.schema().field("customers_tier")).isNull();
            assertThat(old.getString("customers_name")).isEqualTo("Alice");

            Struct newer = validated(e.enrichBlocking(orderWithChannel(i, 7, 3_500)));
            assertThat(newer.getString("customers_tier")).isEqualTo("gold");
            assertThat(newer.getString("channel")).isEqualTo("web");
            assertThat(newer.getString("customers_" + EnrichConfig.VERSION_COLUMN)).startsWith("3000@");
        }
    }

    @Test
    void aRecordWhoseValueHasAnEqualSchemaInAnotherInstanceIsReadByName() {
        // A producer may give the record a schema equal to, but not the same instance as, its value's.
        Schema copy = SchemaBuilder.struct().name(ENVELOPE.name()).optional()
                .field("before", ORDER_ROW).field("after", ORDER_ROW).field("source", SOURCE)
                .field("op", Schema.STRING_SCHEMA).build();
        SinkRecord r = order(5, 7, 1_500);
        SinkRecord recast = r.newRecord(r.topic(), r.kafkaPartition(), r.keySchema(), r.key(), copy, r.value(), r.timestamp());
        Struct out = validated(engine().enrichBlocking(recast));
        assertThat(out.getStruct("after").getInt64("id")).isEqualTo(5L);
        assertThat(out.getString("op")).isEqualTo("c");
    }
}
