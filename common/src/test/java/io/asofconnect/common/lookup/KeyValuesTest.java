package io.asofconnect.common.lookup;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Timestamp;
import org.junit.jupiter.api.Test;

import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** A key typed by the replica (Debezium) and the same key typed by an event must be one RowKey. */
class KeyValuesTest {
    private static RowKey key(Schema schema, Object value) {
        return RowKey.of(KeyValues.canonical(schema, value));
    }

    @Test
    void datesMatchAcrossDebeziumDaysConnectDatesAndIsoText() {
        LocalDate day = LocalDate.of(2024, 2, 29);
        RowKey replica = key(SchemaBuilder.int32().name("io.debezium.time.Date").build(), (int) day.toEpochDay());
        RowKey connect = key(org.apache.kafka.connect.data.Date.SCHEMA,
                java.util.Date.from(day.atStartOfDay(ZoneOffset.UTC).toInstant()));
        assertThat(connect).isEqualTo(replica);
        assertThat(RowKey.of("2024-02-29")).isEqualTo(replica);
        assertThat(RowKey.of("2024-03-01")).isNotEqualTo(replica);
    }

    @Test
    void timestampsMatchAcrossMicrosAndConnectTimestamps() {
        LocalDateTime t = LocalDateTime.of(2024, 1, 2, 3, 4, 5, 678_000_000);
        long micros = t.toInstant(ZoneOffset.UTC).toEpochMilli() * 1000;
        RowKey replica = key(SchemaBuilder.int64().name("io.debezium.time.MicroTimestamp").build(), micros);
        RowKey connect = key(Timestamp.SCHEMA, java.util.Date.from(t.toInstant(ZoneOffset.UTC)));
        RowKey millis = key(SchemaBuilder.int64().name("io.debezium.time.Timestamp").build(), micros / 1000);
        assertThat(connect).isEqualTo(replica);
        assertThat(millis).isEqualTo(replica);
        assertThat(key(Timestamp.SCHEMA, new java.util.Date(micros / 1000 + 1))).isNotEqualTo(replica);
    }

    @Test
    void uuidTextMatchesInAnyCase() {
        UUID u = UUID.randomUUID();
        assertThat(RowKey.of(u.toString().toUpperCase())).isEqualTo(RowKey.of(u.toString())).isEqualTo(RowKey.of(u));
        assertThat(RowKey.of("ABC")).isNotEqualTo(RowKey.of("abc"));
    }

    @Test
    void valuesWithoutASchemaNameAreLeftToRowKey() {
        assertThat(KeyValues.canonical(Schema.INT32_SCHEMA, 7)).isEqualTo(7);
        assertThat(KeyValues.canonical(null, "x")).isEqualTo("x");
    }
}
