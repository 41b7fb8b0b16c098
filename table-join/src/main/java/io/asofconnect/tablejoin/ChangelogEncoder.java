package io.asofconnect.tablejoin;

import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;

/**
 * Writes a view change as the records of the view's {@link Encoding}: a key (the view key) and a value each.
 * The number of records a change gives is fixed by its kind, so a restart can skip the ones already written.
 */
final class ChangelogEncoder {
    /** Flink's RowKind short strings. */
    static final String INSERT = "+I";
    static final String UPDATE_BEFORE = "-U";
    static final String UPDATE_AFTER = "+U";
    static final String DELETE = "-D";

    record Encoded(Struct key, Schema valueSchema, Struct value) {
    }

    private final Encoding encoding;
    private final String opField;
    private final String viewName;
    private final Map<Schema, Schema> withOp = new IdentityHashMap<>();

    ChangelogEncoder(Encoding encoding, String opField, String viewName) {
        this.encoding = encoding;
        this.opField = opField;
        this.viewName = viewName;
    }

    List<Encoded> encode(ViewChange c) {
        return switch (encoding) {
            case APPEND -> {
                if (c.kind() != ViewChange.Kind.INSERT) {
                    // Validation allows APPEND only for insert-only inputs, and the task checks every change is an insert.
                    throw new ConnectException("view " + viewName + " met a " + c.kind() + " of a view row under view.encoding APPEND");
                }
                yield List.of(new Encoded(c.key(), c.after().schema(), c.after()));
            }
            case UPSERT -> List.of(c.after() == null
                    ? new Encoded(c.key(), null, null)
                    : new Encoded(c.key(), c.after().schema(), c.after()));
            case RETRACT -> switch (c.kind()) {
                case INSERT -> List.of(op(c.key(), c.after(), INSERT));
                case DELETE -> List.of(op(c.key(), c.before(), DELETE));
                case UPDATE -> List.of(op(c.key(), c.before(), UPDATE_BEFORE), op(c.key(), c.after(), UPDATE_AFTER));
            };
        };
    }

    private Encoded op(Struct key, Struct row, String op) {
        Schema schema = withOp.computeIfAbsent(row.schema(), s -> {
            SchemaBuilder b = SchemaBuilder.struct().name(s.name());
            b.field(opField, Schema.STRING_SCHEMA);
            for (Field f : s.fields()) {
                b.field(f.name(), f.schema());
            }
            return b.build();
        });
        Struct out = new Struct(schema).put(opField, op);
        for (Field f : row.schema().fields()) {
            out.put(f.name(), row.get(f));
        }
        return new Encoded(key, schema, out);
    }
}
