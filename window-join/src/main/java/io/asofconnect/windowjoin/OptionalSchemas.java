package io.asofconnect.windowjoin;

import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;

/**
 * The optional form of a schema: every side's column is nullable in the output, because an unmatched row has no
 * values for the other side. Names, versions and parameters (logical types) are kept; defaults are not, a missing
 * side must read as NULL, not as a default.
 */
final class OptionalSchemas {
    private OptionalSchemas() {
    }

    static Schema of(Schema s) {
        if (s.isOptional() && s.defaultValue() == null) {
            return s;
        }
        SchemaBuilder b = switch (s.type()) {
            case STRUCT -> {
                SchemaBuilder sb = SchemaBuilder.struct();
                for (Field f : s.fields()) {
                    sb.field(f.name(), f.schema());
                }
                yield sb;
            }
            case ARRAY -> SchemaBuilder.array(s.valueSchema());
            case MAP -> SchemaBuilder.map(s.keySchema(), s.valueSchema());
            default -> SchemaBuilder.type(s.type());
        };
        if (s.name() != null) {
            b.name(s.name());
        }
        if (s.version() != null) {
            b.version(s.version());
        }
        if (s.doc() != null) {
            b.doc(s.doc());
        }
        if (s.parameters() != null) {
            b.parameters(s.parameters());
        }
        return b.optional().build();
    }
}
