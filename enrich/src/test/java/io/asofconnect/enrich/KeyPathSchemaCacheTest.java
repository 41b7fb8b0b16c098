package io.asofconnect.enrich;

import io.asofconnect.common.lookup.RowKey;
import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.LocalDate;
import java.time.ZoneOffset;

import static io.asofconnect.enrich.Fixtures.CUSTOMERS;
import static io.asofconnect.enrich.Fixtures.customerV1;
import static io.asofconnect.enrich.Fixtures.props;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The key paths' schemas are resolved once per value schema: when the value schema changes between records,
 * the key is read with the new schema's type, also when two schemas alternate.
 */
class KeyPathSchemaCacheTest {
    /** The key field typed as a Connect Date ... */
    static final Schema BY_DATE = SchemaBuilder.struct().name("events.Value").field("day", Date.SCHEMA).build();
    /** ... and, after the producer changed, as ISO text. */
    static final Schema BY_TEXT = SchemaBuilder.struct().name("events.Value").field("day", Schema.STRING_SCHEMA).build();

    @TempDir
    Path dir;
    TestReplica replica;

    @BeforeEach
    void setUp() {
        replica = new TestReplica(dir, CUSTOMERS);
        replica.put(CUSTOMERS, RowKey.of("2022-01-05"), 1_000, customerV1(7, "Alice", "10.50"));
        replica.commit(10_000);
    }

    @AfterEach
    void tearDown() {
        replica.close();
    }

    private static SinkRecord event(Schema schema, Object day) {
        return new SinkRecord("events", 0, null, null, schema, new Struct(schema).put("day", day), 1L, 1_500L, null);
    }

    @Test
    void alternatingKeyTypesEachFindTheRow() {
        EnrichmentEngine e = new EnrichmentEngine(new EnrichConfig(props(EnrichConfig.KEY_FIELDS, "day",
                EnrichConfig.TIME_SOURCE, "RECORD_TIMESTAMP")), replica.lookup());
        java.util.Date day = java.util.Date.from(LocalDate.of(2022, 1, 5).atStartOfDay(ZoneOffset.UTC).toInstant());
        for (int i = 0; i < 3; i++) {
            for (SinkRecord r : new SinkRecord[]{event(BY_DATE, day), event(BY_TEXT, "2022-01-05")}) {
                Struct out = (Struct) e.enrichBlocking(r).value();
                out.validate();
                assertThat(out.getStruct("customers").getString("name")).isEqualTo("Alice");
            }
        }
    }
}
