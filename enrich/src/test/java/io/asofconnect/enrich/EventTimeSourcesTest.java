package io.asofconnect.enrich;

import io.asofconnect.enrich.EnrichOutcome.Failed;
import io.asofconnect.common.lookup.RowKey;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Date;
import java.util.Map;

import static io.asofconnect.enrich.Fixtures.CUSTOMERS;
import static io.asofconnect.enrich.Fixtures.customerV1;
import static org.assertj.core.api.Assertions.assertThat;

/** Every way of giving the event time: it must pick "before" (valid from 1000) or "after" (from 2000). */
class EventTimeSourcesTest {
    static final long CHANGE = java.time.Instant.parse("2024-12-01T10:00:00Z").toEpochMilli();

    @TempDir
    Path dir;
    TestReplica replica;

    @BeforeEach
    void setUp() {
        replica = new TestReplica(dir, CUSTOMERS);
        replica.put(CUSTOMERS, RowKey.of(7), CHANGE - 60_000, customerV1(7, "before", "1.00"));
        replica.put(CUSTOMERS, RowKey.of(7), CHANGE, customerV1(7, "after", "2.00"));
        replica.commit(CHANGE + 3_600_000);
    }

    @AfterEach
    void tearDown() {
        replica.close();
    }

    private String nameFor(Schema atSchema, Object at, Long recordTs, ConnectHeaders headers, String... extra) {
        Schema event = SchemaBuilder.struct().field("cid", Schema.INT64_SCHEMA).field("at", atSchema).build();
        Struct value = new Struct(event).put("cid", 7L).put("at", at);
        SinkRecord r = new SinkRecord("t", 0, null, null, event, value, 0, recordTs, null, headers);
        Map<String, Object> p = new java.util.HashMap<>(Map.of(EnrichConfig.TABLE, CUSTOMERS, EnrichConfig.KEY_FIELDS, "cid"));
        for (int i = 0; i < extra.length; i += 2) {
            p.put(extra[i], extra[i + 1]);
        }
        EnrichmentEngine e = new EnrichmentEngine(new EnrichConfig(p), replica.lookup());
        return ((Struct) e.enrichBlocking(r).value()).getStruct("customers").getString("name");
    }

    private String byField(Schema atSchema, Object at) {
        return nameFor(atSchema, at, null, new ConnectHeaders(), EnrichConfig.TIME_SOURCE, "FIELD", EnrichConfig.TIME_FIELD, "at");
    }

    @Test
    void recordTimestamp() {
        assertThat(nameFor(Schema.OPTIONAL_STRING_SCHEMA, null, CHANGE - 1, new ConnectHeaders())).isEqualTo("before");
        assertThat(nameFor(Schema.OPTIONAL_STRING_SCHEMA, null, CHANGE, new ConnectHeaders())).isEqualTo("after");
    }

    @Test
    void epochMillisField() {
        assertThat(byField(Schema.INT64_SCHEMA, CHANGE - 1)).isEqualTo("before");
        assertThat(byField(Schema.INT64_SCHEMA, CHANGE)).isEqualTo("after");
        assertThat(byField(Schema.STRING_SCHEMA, Long.toString(CHANGE))).isEqualTo("after");
    }

    @Test
    void isoStringField() {
        assertThat(byField(Schema.STRING_SCHEMA, "2024-12-01T09:59:59.999Z")).isEqualTo("before");
        assertThat(byField(Schema.STRING_SCHEMA, "2024-12-01T10:00:00Z")).isEqualTo("after");
        assertThat(byField(Schema.STRING_SCHEMA, "2024-12-01T10:59:59.999+01:00")).isEqualTo("before");
        assertThat(byField(Schema.STRING_SCHEMA, "2024-12-01T11:00:00+01:00")).isEqualTo("after");
    }

    @Test
    void connectTimestampField() {
        assertThat(byField(Timestamp.SCHEMA, new Date(CHANGE - 1))).isEqualTo("before");
        assertThat(byField(Timestamp.SCHEMA, new Date(CHANGE))).isEqualTo("after");
    }

    @Test
    void header() {
        ConnectHeaders millis = new ConnectHeaders();
        millis.addLong("event-time", CHANGE - 1);
        assertThat(nameFor(Schema.OPTIONAL_STRING_SCHEMA, null, null, millis,
                EnrichConfig.TIME_SOURCE, "HEADER", EnrichConfig.TIME_HEADER, "event-time")).isEqualTo("before");
        ConnectHeaders iso = new ConnectHeaders();
        iso.addString("event-time", "2024-12-01T10:00:00Z");
        assertThat(nameFor(Schema.OPTIONAL_STRING_SCHEMA, null, null, iso,
                EnrichConfig.TIME_SOURCE, "HEADER", EnrichConfig.TIME_HEADER, "event-time")).isEqualTo("after");
    }

    @Test
    void unusableTimesFailNamingTheOptionNotTheValue() {
        Schema event = SchemaBuilder.struct().field("cid", Schema.INT64_SCHEMA).field("at", Schema.STRING_SCHEMA).build();
        SinkRecord r = new SinkRecord("t", 0, null, null, event, new Struct(event).put("cid", 7L).put("at", "yesterday-ish"), 0);
        EnrichmentEngine e = new EnrichmentEngine(new EnrichConfig(Map.of(EnrichConfig.TABLE, CUSTOMERS, EnrichConfig.KEY_FIELDS, "cid",
                EnrichConfig.TIME_SOURCE, "FIELD", EnrichConfig.TIME_FIELD, "at")), replica.lookup());
        assertThat(((Failed<SinkRecord>) e.tryEnrich(r)).reason())
                .hasMessageContaining(EnrichConfig.TIME_FIELD).hasMessageNotContaining("yesterday-ish");

        EnrichmentEngine byTs = new EnrichmentEngine(new EnrichConfig(Map.of(EnrichConfig.TABLE, CUSTOMERS, EnrichConfig.KEY_FIELDS, "cid")),
                replica.lookup());
        assertThat(((Failed<SinkRecord>) byTs.tryEnrich(r)).reason()).hasMessageContaining(EnrichConfig.TIME_SOURCE);

        EnrichmentEngine byHeader = new EnrichmentEngine(new EnrichConfig(Map.of(EnrichConfig.TABLE, CUSTOMERS, EnrichConfig.KEY_FIELDS, "cid",
                EnrichConfig.TIME_SOURCE, "HEADER", EnrichConfig.TIME_HEADER, "h")), replica.lookup());
        assertThat(((Failed<SinkRecord>) byHeader.tryEnrich(r)).reason()).hasMessageContaining(EnrichConfig.TIME_HEADER).hasMessageContaining("missing");
    }
}
