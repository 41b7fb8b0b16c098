package io.asofconnect.store;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;

/** Two shapes of one table (before and after an ALTER TABLE ADD COLUMN), for tests that need simple rows. */
final class TestRows {
    static final Schema V1 = SchemaBuilder.struct().name("test.public.items.Value")
            .field("id", Schema.INT64_SCHEMA).field("value", Schema.INT64_SCHEMA).build();
    static final Schema V2 = SchemaBuilder.struct().name("test.public.items.Value")
            .field("id", Schema.INT64_SCHEMA).field("value", Schema.INT64_SCHEMA).field("note", Schema.OPTIONAL_STRING_SCHEMA).build();

    private TestRows() {
    }

    static Struct row(long id, long value, boolean newShape) {
        if (newShape) {
            return new Struct(V2).put("id", id).put("value", value).put("note", "n-" + value + "-ü");
        }
        return new Struct(V1).put("id", id).put("value", value);
    }
}
