package io.asofconnect.tablejoin;

import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.connect.data.ConnectSchema;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;

/**
 * Builds the view's rows and keys from a left and a right row. Each output column keeps its source column's schema
 * (as the replica captured it); right columns are optional in a LEFT view. Schemas are built once per pair of row
 * schemas: rows of one table share their schema object until the table is altered.
 */
final class ViewRows {
    private final ViewDefinition view;
    private final String valueName;
    private final Map<Schema, Map<Schema, Schema>> shapes = new IdentityHashMap<>();
    private final Map<Schema, Schema> keySchemas = new IdentityHashMap<>();
    /** The right table's last schema seen: a LEFT row without a match takes its right columns' types from it. */
    private Schema lastRight;
    private Supplier<Schema> rightSchemaSource = () -> null;

    ViewRows(ViewDefinition view, String valueName) {
        this.view = view;
        this.valueName = valueName;
    }

    /** Remembers a right row's schema, for rows without a match. */
    void sawRight(Struct right) {
        if (right != null) {
            lastRight = right.schema();
        }
    }

    /**
     * Where to find the right table's schema when no right row was seen since the task started (a restart, then a
     * left row without a match): any row of it the replica retains.
     */
    void rightSchemaFrom(Supplier<Schema> source) {
        this.rightSchemaSource = source;
    }

    /** The view row of {@code left} and {@code right} (null in a LEFT view's row without a match). */
    Struct row(Struct left, Struct right) {
        sawRight(right);
        if (right == null && lastRight == null) {
            lastRight = rightSchemaSource.get();
        }
        Schema rightSchema = right != null ? right.schema() : lastRight;
        if (rightSchema == null) {
            throw new ConnectException("the view's row for a " + view.left().table() + " row without a match needs the"
                    + " column types of " + view.right().table() + ", and the replica holds no row of it yet: insert a row"
                    + " into " + view.right().table() + " (it may be deleted again) and restart the task");
        }
        Struct out = new Struct(valueSchema(left.schema(), rightSchema));
        for (OutputColumn c : view.columns()) {
            Struct from = c.left() ? left : right;
            if (from != null) {
                out.put(c.name(), from.get(c.column()));
            }
        }
        return out;
    }

    /** The key of a view row. */
    Struct key(Struct row) {
        Schema keySchema = keySchema(row.schema());
        Struct key = new Struct(keySchema);
        for (String k : view.key()) {
            key.put(k, row.get(k));
        }
        return key;
    }

    private Schema keySchema(Schema valueSchema) {
        return keySchemas.computeIfAbsent(valueSchema, v -> {
            SchemaBuilder b = SchemaBuilder.struct().name(valueName + ".Key");
            for (String k : view.key()) {
                b.field(k, required(v.field(k).schema()));
            }
            return b.build();
        });
    }

    private Schema valueSchema(Schema left, Schema right) {
        return shapes.computeIfAbsent(left, l -> new IdentityHashMap<>()).computeIfAbsent(right, r -> {
            SchemaBuilder b = SchemaBuilder.struct().name(valueName + ".Value").optional();
            for (OutputColumn c : view.columns()) {
                Schema table = c.left() ? left : right;
                Field f = table.field(c.column());
                if (f == null) {
                    throw new ConnectException("view.columns names " + (c.left() ? view.left() : view.right()).table() + "."
                            + c.column() + ", but the table's rows have no such column (they have " + names(table.fields())
                            + "); fix view.columns");
                }
                b.field(c.name(), !c.left() && view.type() == JoinType.LEFT ? optional(f.schema()) : f.schema());
            }
            return b.build();
        });
    }

    private static List<String> names(List<Field> fields) {
        return fields.stream().map(Field::name).toList();
    }

    static Schema optional(Schema s) {
        if (s.isOptional()) {
            return s;
        }
        return new ConnectSchema(s.type(), true, s.defaultValue(), s.name(), s.version(), s.doc(), s.parameters(),
                fieldsOrNull(s), keyOrNull(s), valueOrNull(s));
    }

    private static Schema required(Schema s) {
        if (!s.isOptional()) {
            return s;
        }
        return new ConnectSchema(s.type(), false, s.defaultValue(), s.name(), s.version(), s.doc(), s.parameters(),
                fieldsOrNull(s), keyOrNull(s), valueOrNull(s));
    }

    private static List<Field> fieldsOrNull(Schema s) {
        return s.type() == Schema.Type.STRUCT ? s.fields() : null;
    }

    private static Schema keyOrNull(Schema s) {
        return s.type() == Schema.Type.MAP ? s.keySchema() : null;
    }

    private static Schema valueOrNull(Schema s) {
        return s.type() == Schema.Type.MAP || s.type() == Schema.Type.ARRAY ? s.valueSchema() : null;
    }
}
