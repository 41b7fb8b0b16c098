package io.asofconnect.enrich;

import io.asofconnect.enrich.EnrichOutcome.Failed;
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
import java.util.HashMap;
import java.util.Map;

import static io.asofconnect.enrich.Fixtures.CUSTOMERS;
import static io.asofconnect.enrich.Fixtures.customerV1;
import static org.assertj.core.api.Assertions.assertThat;

/** The schemaless path: values are Maps (JsonConverter with schemas.enable=false). */
class SchemalessEnrichmentTest {
    @TempDir
    Path dir;
    TestReplica replica;

    @BeforeEach
    void setUp() {
        replica = new TestReplica(dir, CUSTOMERS);
        replica.put(CUSTOMERS, RowKey.of(7), 1_000, customerV1(7, "Alice", "10.50"));
        replica.commit(10_000);
    }

    @AfterEach
    void tearDown() {
        replica.close();
    }

    private static SinkRecord event(Object customerId, long ts) {
        Map<String, Object> after = new HashMap<>(Map.of("id", 1L, "customer_id", customerId));
        Map<String, Object> value = new HashMap<>(Map.of("after", after, "source", Map.of("ts_ms", ts), "op", "c"));
        return new SinkRecord("t", 0, null, null, null, value, 3L, ts, null);
    }

    private SinkRecord enrich(SinkRecord r, String... extra) {
        return new EnrichmentEngine(new EnrichConfig(Fixtures.props(extra)), replica.lookup()).enrichBlocking(r);
    }

    @Test
    @SuppressWarnings("unchecked")
    void applySchemalessNestsAMap() {
        // A JSON number arrives as a Long where the key column is int4: the key still matches.
        SinkRecord r = enrich(event(7L, 2_000));
        assertThat(r.valueSchema()).isNull();
        Map<String, Object> value = (Map<String, Object>) r.value();
        Map<String, Object> c = (Map<String, Object>) value.get("customers");
        assertThat(c).containsEntry("name", "Alice").containsEntry("credit", new BigDecimal("10.50"))
                .containsEntry(EnrichConfig.VALID_FROM_COLUMN, 1_000L).containsKey(EnrichConfig.VERSION_COLUMN);
        assertThat(value).containsEntry("op", "c");
    }

    @Test
    @SuppressWarnings("unchecked")
    void applySchemalessFlattensAndWritesNullsOnAMiss() {
        SinkRecord r = enrich(event(7L, 2_000), EnrichConfig.OUTPUT_MODE, "FLATTEN", EnrichConfig.COLUMNS, "name,missing_col");
        Map<String, Object> value = (Map<String, Object>) r.value();
        assertThat(value).containsEntry("customers_name", "Alice").containsEntry("customers_missing_col", null)
                .doesNotContainKey("customers_credit");

        Map<String, Object> miss = (Map<String, Object>) enrich(event(8L, 2_000), EnrichConfig.OUTPUT_MODE, "FLATTEN",
                EnrichConfig.COLUMNS, "name").value();
        assertThat(miss).containsEntry("customers_name", null).containsEntry("customers_" + EnrichConfig.VERSION_COLUMN, null);

        Map<String, Object> nestedMiss = (Map<String, Object>) enrich(event(8L, 2_000)).value();
        assertThat(nestedMiss).containsEntry("customers", null);
    }

    @Test
    @SuppressWarnings("unchecked")
    void structColumnsBecomeMapsInSchemalessOutput() {
        Schema point = SchemaBuilder.struct().name("io.debezium.data.geometry.Point").field("x", Schema.FLOAT64_SCHEMA)
                .field("y", Schema.FLOAT64_SCHEMA).build();
        Schema row = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).field("home", point).build();
        replica.put(CUSTOMERS, RowKey.of(9), 1_000, new Struct(row).put("id", 9).put("home", new Struct(point).put("x", 1.0).put("y", 2.0)));
        replica.commit(10_000);
        Map<String, Object> c = (Map<String, Object>) ((Map<String, Object>) enrich(event(9, 2_000)).value()).get("customers");
        assertThat(c.get("home")).isEqualTo(Map.of("x", 1.0, "y", 2.0));
    }

    @Test
    void aSchemalessValueThatIsNoMapFailsNamingTheType() {
        SinkRecord r = new SinkRecord("t", 0, null, null, null, "text", 0);
        EnrichOutcome<SinkRecord> o = new EnrichmentEngine(new EnrichConfig(Fixtures.props()), replica.lookup()).tryEnrich(r);
        assertThat(((Failed<SinkRecord>) o).reason()).hasMessageContaining("java.lang.String").hasMessageContaining("Map");
    }

    @Test
    void aSchemalessTombstonePassesThrough() {
        SinkRecord r = new SinkRecord("t", 0, null, "k", null, null, 0);
        assertThat(enrich(r)).isSameAs(r);
    }
}
