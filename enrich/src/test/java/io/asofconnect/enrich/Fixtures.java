package io.asofconnect.enrich;

import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.sink.SinkRecord;

import java.math.BigDecimal;
import java.util.HashMap;
import java.util.Map;

/** Shapes of a customers dimension and a Debezium-like orders stream, shared by the tests. */
public final class Fixtures {
    public static final String CUSTOMERS = "public.customers";
    public static final String TOPIC = "pg.public.orders";

    /** The customers row as Debezium first captured it. */
    public static final Schema CUSTOMER_V1 = SchemaBuilder.struct().name("pg.public.customers.Value")
            .field("id", Schema.INT32_SCHEMA)
            .field("name", Schema.OPTIONAL_STRING_SCHEMA)
            .field("credit", Decimal.builder(2).optional().build())
            .field("since", SchemaBuilder.int32().name("io.debezium.time.Date").version(1).optional().build())
            .build();

    /** After {@code ALTER TABLE customers ADD COLUMN tier text}. */
    public static final Schema CUSTOMER_V2 = SchemaBuilder.struct().name("pg.public.customers.Value")
            .field("id", Schema.INT32_SCHEMA)
            .field("name", Schema.OPTIONAL_STRING_SCHEMA)
            .field("credit", Decimal.builder(2).optional().build())
            .field("since", SchemaBuilder.int32().name("io.debezium.time.Date").version(1).optional().build())
            .field("tier", Schema.OPTIONAL_STRING_SCHEMA)
            .build();

    public static final Schema ORDER_ROW = SchemaBuilder.struct().name("pg.public.orders.Value").optional()
            .field("id", Schema.INT64_SCHEMA)
            .field("customer_id", Schema.INT64_SCHEMA)
            .build();
    public static final Schema SOURCE = SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source")
            .field("ts_ms", Schema.INT64_SCHEMA)
            .build();
    public static final Schema ENVELOPE = SchemaBuilder.struct().name("pg.public.orders.Envelope").optional()
            .field("before", ORDER_ROW)
            .field("after", ORDER_ROW)
            .field("source", SOURCE)
            .field("op", Schema.STRING_SCHEMA)
            .build();

    private Fixtures() {
    }

    public static Struct customerV1(int id, String name, String credit) {
        return new Struct(CUSTOMER_V1).put("id", id).put("name", name).put("credit", new BigDecimal(credit)).put("since", 19000);
    }

    public static Struct customerV2(int id, String name, String credit, String tier) {
        return new Struct(CUSTOMER_V2).put("id", id).put("name", name).put("credit", new BigDecimal(credit))
                .put("since", 19000).put("tier", tier);
    }

    /** A Debezium create event of an order committed at {@code tsMs}. */
    public static SinkRecord order(long orderId, long customerId, long tsMs) {
        Struct after = new Struct(ORDER_ROW).put("id", orderId).put("customer_id", customerId);
        Struct value = new Struct(ENVELOPE).put("after", after).put("source", new Struct(SOURCE).put("ts_ms", tsMs)).put("op", "c");
        ConnectHeaders headers = new ConnectHeaders();
        headers.addString("trace", "t-1");
        return new SinkRecord(TOPIC, 1, Schema.INT64_SCHEMA, orderId, ENVELOPE, value, 77L, tsMs + 5, null, headers);
    }

    /** A Debezium delete event: {@code after} is null. */
    public static SinkRecord orderDelete(long orderId, long tsMs) {
        Struct before = new Struct(ORDER_ROW).put("id", orderId).put("customer_id", 1L);
        Struct value = new Struct(ENVELOPE).put("before", before).put("source", new Struct(SOURCE).put("ts_ms", tsMs)).put("op", "d");
        return new SinkRecord(TOPIC, 1, Schema.INT64_SCHEMA, orderId, ENVELOPE, value, 78L, tsMs, null);
    }

    /** The props of a Debezium orders → customers enrichment, as-of {@code source.ts_ms}, plus {@code extra} pairs. */
    public static Map<String, Object> props(String... extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(EnrichConfig.TABLE, CUSTOMERS);
        p.put(EnrichConfig.KEY_FIELDS, "after.customer_id");
        p.put(EnrichConfig.TIME_SOURCE, "FIELD");
        p.put(EnrichConfig.TIME_FIELD, "source.ts_ms");
        for (int i = 0; i < extra.length; i += 2) {
            p.put(extra[i], extra[i + 1]);
        }
        return p;
    }
}
