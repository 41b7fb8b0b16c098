package io.asofconnect.enrich;

import io.asofconnect.common.lookup.RowKey;
import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Key values typed by the event's schema meet the replica's rows, which are keyed by
 * {@link io.asofconnect.common.lookup.KeyValues#canonical} of the key column (dates as ISO text, timestamps as
 * epoch micros, uuids in lower case).
 */
class KeyCanonicalFormTest {
    private static final String RATES = "public.rates";
    private static final String TICKS = "public.ticks";
    private static final String DEVICES = "public.devices";
    private static final LocalDate DAY = LocalDate.of(2024, 1, 2);
    private static final LocalDateTime AT = LocalDateTime.of(2024, 1, 2, 3, 4, 5, 678_000_000);
    private static final long AT_MICROS = AT.toEpochSecond(ZoneOffset.UTC) * 1_000_000L + 678_000L;
    private static final String UUID_TEXT = "6f1c2a4e-9b0d-4c3e-8a7f-112233445566";
    private static final Schema ROW = SchemaBuilder.struct().field("label", Schema.STRING_SCHEMA).build();

    @TempDir
    Path dir;
    TestReplica replica;

    @BeforeEach
    void setUp() {
        replica = new TestReplica(dir, RATES, TICKS, DEVICES);
        // As the replica stores them: a Postgres date key as ISO text, a timestamp key as epoch micros.
        replica.put(RATES, RowKey.of("2024-01-02"), 1_000, new Struct(ROW).put("label", "rate of the day"));
        replica.put(TICKS, RowKey.of(AT_MICROS), 1_000, new Struct(ROW).put("label", "tick"));
        replica.put(DEVICES, RowKey.of(UUID_TEXT), 1_000, new Struct(ROW).put("label", "device"));
        replica.commit(10_000);
    }

    @AfterEach
    void tearDown() {
        replica.close();
    }

    private String labelOf(String table, Schema keySchema, Object keyValue) {
        Schema event = SchemaBuilder.struct().field("k", keySchema).build();
        SinkRecord r = new SinkRecord("t", 0, null, null, event, new Struct(event).put("k", keyValue), 0, 5_000L, null);
        SinkRecord out = engine(table).enrichBlocking(r);
        Struct nested = ((Struct) out.value()).getStruct(table.substring(table.indexOf('.') + 1));
        return nested == null ? null : nested.getString("label");
    }

    private EnrichmentEngine engine(String table) {
        return new EnrichmentEngine(new EnrichConfig(Map.of(EnrichConfig.TABLE, table, EnrichConfig.KEY_FIELDS, "k")),
                replica.lookup());
    }

    @Test
    void aConnectDateKeyMatchesTheIsoDateKey() {
        java.util.Date midnight = java.util.Date.from(DAY.atStartOfDay(ZoneOffset.UTC).toInstant());
        assertThat(labelOf(RATES, Date.SCHEMA, midnight)).isEqualTo("rate of the day");
    }

    @Test
    void aDebeziumDateKeyMatchesTheIsoDateKey() {
        Schema dbzDate = SchemaBuilder.int32().name("io.debezium.time.Date").version(1).build();
        assertThat(labelOf(RATES, dbzDate, (int) DAY.toEpochDay())).isEqualTo("rate of the day");
    }

    @Test
    void aConnectTimestampKeyMatchesTheEpochMicrosKey() {
        java.util.Date at = java.util.Date.from(AT.toInstant(ZoneOffset.UTC));
        assertThat(labelOf(TICKS, Timestamp.SCHEMA, at)).isEqualTo("tick");
    }

    @Test
    void aSchemalessIsoDateStringMatches() {
        Map<String, Object> value = new HashMap<>(Map.of("k", "2024-01-02"));
        SinkRecord r = new SinkRecord("t", 0, null, null, null, value, 0, 5_000L, null);
        @SuppressWarnings("unchecked")
        Map<String, Object> rates = (Map<String, Object>) ((Map<String, Object>) engine(RATES).enrichBlocking(r).value()).get("rates");
        assertThat(rates).containsEntry("label", "rate of the day");
    }

    @Test
    void anUpperCaseUuidStringMatches() {
        assertThat(labelOf(DEVICES, Schema.STRING_SCHEMA, UUID_TEXT.toUpperCase())).isEqualTo("device");
        Schema dbzUuid = SchemaBuilder.string().name("io.debezium.data.Uuid").version(1).build();
        assertThat(labelOf(DEVICES, dbzUuid, UUID_TEXT.toUpperCase())).isEqualTo("device");
    }

    @Test
    void aKeyFromTheRecordKeyIsCanonicalToo() {
        Schema keySchema = SchemaBuilder.struct().field("day", Date.SCHEMA).build();
        java.util.Date midnight = java.util.Date.from(DAY.atStartOfDay(ZoneOffset.UTC).toInstant());
        Schema event = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build();
        SinkRecord r = new SinkRecord("t", 0, keySchema, new Struct(keySchema).put("day", midnight), event,
                new Struct(event).put("x", 1), 0, 5_000L, null);
        EnrichmentEngine e = new EnrichmentEngine(new EnrichConfig(Map.of(EnrichConfig.TABLE, RATES,
                EnrichConfig.KEY_SOURCE, "KEY", EnrichConfig.KEY_FIELDS, "day")), replica.lookup());
        assertThat(((Struct) e.enrichBlocking(r).value()).getStruct("rates").getString("label")).isEqualTo("rate of the day");

        SinkRecord whole = new SinkRecord("t", 0, Date.SCHEMA, midnight, event, new Struct(event).put("x", 1), 0, 5_000L, null);
        EnrichmentEngine byWholeKey = new EnrichmentEngine(new EnrichConfig(Map.of(EnrichConfig.TABLE, RATES,
                EnrichConfig.KEY_SOURCE, "KEY")), replica.lookup());
        assertThat(((Struct) byWholeKey.enrichBlocking(whole).value()).getStruct("rates").getString("label")).isEqualTo("rate of the day");
    }

    @Test
    void aValueThatDoesNotFitItsLogicalTypeIsADataErrorWithoutTheValue() {
        // A schema that claims io.debezium.time.Date over a string: a producer bug, reported without the value.
        Schema lying = SchemaBuilder.string().name("io.debezium.time.Date").build();
        Schema event = SchemaBuilder.struct().field("k", lying).build();
        SinkRecord r = new SinkRecord("t", 0, null, null, event, new Struct(event).put("k", "secret-2024"), 0, 5_000L, null);
        assertThatThrownBy(() -> engine(RATES).enrichBlocking(r)).isInstanceOf(DataException.class)
                .hasMessageContaining(EnrichConfig.KEY_FIELDS).hasMessageContaining("io.debezium.time.Date")
                .hasMessageNotContaining("secret-2024");
    }
}
