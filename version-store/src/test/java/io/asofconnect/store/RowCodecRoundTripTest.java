package io.asofconnect.store;

import io.asofconnect.common.data.RowCodec;
import io.asofconnect.common.data.SchemaCodec;
import io.asofconnect.common.data.ByteSink;
import io.asofconnect.common.data.ByteSource;

import io.asofconnect.common.data.TrustedStruct;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Time;
import org.apache.kafka.connect.data.Timestamp;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Every Connect type Debezium produces for Postgres goes into the store and comes back equal, schema included. */
class RowCodecRoundTripTest {
    private static final String TABLE = "public.customers";
    @TempDir
    Path dir;
    private MapDbVersionStore store;
    private long lsn = 100;

    @BeforeEach
    void open() {
        store = MapDbVersionStore.open(dir.resolve("store.db"), StoreOptions.defaults());
    }

    @AfterEach
    void close() {
        store.close();
    }

    /** Through the store, then again after a close and reopen (so the schema really comes from the file). */
    private void assertRoundTrip(Struct row) {
        RowKey key = RowKey.of(lsn);
        Version v = new Version(1000L, new SourcePosition(lsn++, 0), row);
        store.put(TABLE, key, v);
        assertThat(store.latest(TABLE, key)).contains(v);
        store.commit();
        store.close();
        store = MapDbVersionStore.open(dir.resolve("store.db"), StoreOptions.defaults());
        Version back = store.latest(TABLE, key).orElseThrow();
        assertThat(back.row().schema()).isEqualTo(row.schema());
        assertThat(back.row()).isEqualTo(row);
        // Decoding fills the struct without Struct.put's checks (TrustedStruct): Connect's own check must pass.
        back.row().validate();
        assertThat(back).isEqualTo(v);
        // The codec alone, too.
        ByteSink out = new ByteSink(16);
        RowCodec.writeStruct(row, out);
        assertThat(RowCodec.readStruct(SchemaCodec.decode(SchemaCodec.encode(row.schema()), 0), new ByteSource(out.toByteArray(), 0)))
                .isEqualTo(row);
    }

    @Test
    void primitivesAtTheirExtremes() {
        Schema s = SchemaBuilder.struct().name("server.public.customers.Value")
                .field("i8", Schema.INT8_SCHEMA).field("i16", Schema.INT16_SCHEMA).field("i32", Schema.INT32_SCHEMA)
                .field("i64", Schema.INT64_SCHEMA).field("f32", Schema.FLOAT32_SCHEMA).field("f64", Schema.FLOAT64_SCHEMA)
                .field("b", Schema.BOOLEAN_SCHEMA).field("s", Schema.STRING_SCHEMA).field("bytes", Schema.BYTES_SCHEMA)
                .build();
        assertRoundTrip(new Struct(s).put("i8", Byte.MIN_VALUE).put("i16", Short.MAX_VALUE).put("i32", Integer.MIN_VALUE)
                .put("i64", Long.MAX_VALUE).put("f32", Float.NaN).put("f64", -0.0d).put("b", true)
                .put("s", "").put("bytes", new byte[0]));
        assertRoundTrip(new Struct(s).put("i8", (byte) 7).put("i16", Short.MIN_VALUE).put("i32", -1)
                .put("i64", Long.MIN_VALUE).put("f32", Float.NEGATIVE_INFINITY).put("f64", Double.MIN_VALUE).put("b", false)
                .put("s", "plain").put("bytes", new byte[]{0, -1, 127, -128}));
    }

    @Test
    void nonAsciiText() {
        Schema s = SchemaBuilder.struct().field("name", Schema.STRING_SCHEMA).build();
        assertRoundTrip(new Struct(s).put("name", "Zoë Ünal — 東京 🚀 \u0000 end"));
    }

    @Test
    void byteBufferInComesBackAsByteArray() {
        Schema s = SchemaBuilder.struct().field("blob", Schema.BYTES_SCHEMA).build();
        ByteBuffer in = ByteBuffer.allocate(10);
        in.put(new byte[]{9, 9, 1, 2, 3}).flip().position(2);
        Struct row = new Struct(s).put("blob", in);
        store.put(TABLE, RowKey.of(1), new Version(5, new SourcePosition(1, 0), row));
        Object back = store.latest(TABLE, RowKey.of(1)).orElseThrow().row().get("blob");
        assertThat(back).isInstanceOf(byte[].class);
        assertThat((byte[]) back).containsExactly(1, 2, 3);
    }

    @Test
    void nullsInOptionalFieldsStayNullEvenWithDefaults() {
        Schema s = SchemaBuilder.struct().name("v").version(3).doc("a doc")
                .field("id", Schema.INT32_SCHEMA)
                .field("note", SchemaBuilder.string().optional().defaultValue("n/a").build())
                .field("n", Schema.OPTIONAL_INT64_SCHEMA)
                .field("flag", SchemaBuilder.bool().defaultValue(true).build())
                .build();
        assertRoundTrip(new Struct(s).put("id", 1).put("flag", false));
        assertRoundTrip(new Struct(s).put("id", 2).put("note", "x").put("n", 5L).put("flag", true));
    }

    @Test
    void logicalTypesAndDecimalScale() {
        Schema s = SchemaBuilder.struct()
                .field("price", Decimal.schema(2))
                .field("big", Decimal.builder(0).optional().build())
                .field("d", Date.SCHEMA).field("t", Time.SCHEMA).field("ts", Timestamp.SCHEMA)
                .field("micro", SchemaBuilder.int64().name("io.debezium.time.MicroTimestamp").version(1).build())
                .field("zoned", SchemaBuilder.string().name("io.debezium.time.ZonedTimestamp").version(1).optional().build())
                .field("var", SchemaBuilder.struct().name("io.debezium.data.VariableScaleDecimal").version(1).doc("Variable scaled decimal")
                        .field("scale", Schema.INT32_SCHEMA).field("value", Schema.BYTES_SCHEMA).optional().build())
                .field("json", SchemaBuilder.string().name("io.debezium.data.Json").version(1).build())
                .build();
        Struct var = new Struct(s.field("var").schema()).put("scale", 3).put("value", new BigDecimal("12.345").unscaledValue().toByteArray());
        assertRoundTrip(new Struct(s)
                .put("price", new BigDecimal("-12345678901234567890.25"))
                .put("big", new BigDecimal("98765432109876543210"))
                .put("d", new java.util.Date(19_000L * 86_400_000L))
                .put("t", new java.util.Date(45_296_789L))
                .put("ts", new java.util.Date(1_733_080_000_123L))
                .put("micro", 1_733_080_000_123_456L)
                .put("zoned", "2024-12-01T19:06:40.123456Z")
                .put("var", var)
                .put("json", "{\"a\": [1, 2]}"));
        assertThat(s.field("price").schema().parameters()).containsEntry(Decimal.SCALE_FIELD, "2");
    }

    @Test
    void arraysMapsAndNestedStructs() {
        Schema address = SchemaBuilder.struct().name("addr").field("city", Schema.STRING_SCHEMA)
                .field("zip", Schema.OPTIONAL_STRING_SCHEMA).optional().build();
        Schema s = SchemaBuilder.struct()
                .field("tags", SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).optional().build())
                .field("ints", SchemaBuilder.array(Schema.INT32_SCHEMA).build())
                .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA).build())
                .field("address", address)
                .field("history", SchemaBuilder.array(address).build())
                .build();
        Map<String, Long> attrs = new LinkedHashMap<>();
        attrs.put("a", 1L);
        attrs.put("ö", null);
        Struct a1 = new Struct(address).put("city", "Köln").put("zip", "50667");
        Struct a2 = new Struct(address).put("city", "Paris");
        assertRoundTrip(new Struct(s).put("tags", Arrays.asList("x", null, "日本")).put("ints", List.of(1, -2, Integer.MAX_VALUE))
                .put("attrs", attrs).put("address", a1).put("history", List.of(a1, a2)));
        assertRoundTrip(new Struct(s).put("ints", List.of()).put("attrs", Map.of()).put("history", List.of()));
    }

    @Test
    void schemaParametersDocAndNullVersusEmptyParameters() {
        Schema withParams = SchemaBuilder.struct()
                .field("e", SchemaBuilder.string().name("io.debezium.data.Enum").version(1).parameter("allowed", "a,b,c").build())
                .field("len", SchemaBuilder.string().parameter("__debezium.source.column.length", "10").parameter("a", "1").build())
                .build();
        assertRoundTrip(new Struct(withParams).put("e", "b").put("len", "0123456789"));
        assertThat(SchemaCodec.encode(withParams)).isEqualTo(SchemaCodec.encode(SchemaCodec.decode(SchemaCodec.encode(withParams), 0)));
    }

    @Test
    void schemaEvolutionKeepsOldVersionsInTheirOldShape() {
        Schema v1 = SchemaBuilder.struct().name("c.Value").field("id", Schema.INT32_SCHEMA).field("name", Schema.STRING_SCHEMA).build();
        Schema v2 = SchemaBuilder.struct().name("c.Value").field("id", Schema.INT32_SCHEMA).field("name", Schema.STRING_SCHEMA)
                .field("email", Schema.OPTIONAL_STRING_SCHEMA).build();
        RowKey key = RowKey.of(1);
        Struct old = new Struct(v1).put("id", 1).put("name", "Ann");
        Struct neu = new Struct(v2).put("id", 1).put("name", "Ann").put("email", "ann@example.com");
        store.put(TABLE, key, new Version(10, new SourcePosition(1, 0), old));
        store.put(TABLE, key, new Version(20, new SourcePosition(2, 0), neu));
        store.commit();
        store.close();
        store = MapDbVersionStore.open(dir.resolve("store.db"), StoreOptions.defaults());
        assertThat(store.floor(TABLE, key, 15).orElseThrow().row()).isEqualTo(old);
        assertThat(store.floor(TABLE, key, 15).orElseThrow().row().schema()).isEqualTo(v1);
        assertThat(store.floor(TABLE, key, 25).orElseThrow().row()).isEqualTo(neu);
    }

    @Test
    void tombstoneHasNoRow() {
        RowKey key = RowKey.of("k");
        store.put(TABLE, key, Version.tombstone(7, new SourcePosition(3, 1)));
        store.commit();
        assertThat(store.latest(TABLE, key)).contains(Version.tombstone(7, new SourcePosition(3, 1)));
    }

    @Test
    void eachSchemaIsStoredOnce() {
        Schema s = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build();
        for (int i = 0; i < 50; i++) {
            store.put(TABLE, RowKey.of(i), new Version(i, new SourcePosition(i, 0), new Struct(s).put("id", i)));
        }
        store.commit();
        assertThat(store.schemaCount()).isEqualTo(1);
    }
}
