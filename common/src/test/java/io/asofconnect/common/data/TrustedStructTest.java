package io.asofconnect.common.data;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;
import org.junit.jupiter.api.Test;

class TrustedStructTest {
    private static final Schema ROW = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA)
            .field("name", Schema.OPTIONAL_STRING_SCHEMA).build();

    @Test
    void theFastPathIsAvailableOnThisKafka() {
        // Should a Kafka upgrade remove Struct's value array, lookups fall back to put and slow down: say so here.
        assertThat(TrustedStruct.slots(new Struct(ROW))).hasSize(2);
    }

    @Test
    void aTrustedStructEqualsOneBuiltWithPutAndValidates() {
        Struct trusted = new Struct(ROW);
        Object[] slots = TrustedStruct.slots(trusted);
        TrustedStruct.set(trusted, slots, ROW.field("id"), 7L);
        TrustedStruct.set(trusted, slots, ROW.field("name"), "Alice");
        trusted.validate();
        Struct put = new Struct(ROW).put("id", 7L).put("name", "Alice");
        assertThat(trusted).isEqualTo(put).hasSameHashCodeAs(put);
        assertThat(trusted.getString("name")).isEqualTo("Alice");
    }

    @Test
    void withoutSlotsEveryValueIsChecked() {
        Struct s = new Struct(ROW);
        assertThatThrownBy(() -> TrustedStruct.set(s, null, ROW.field("id"), "not a number")).isInstanceOf(DataException.class);
    }
}
