package io.asofconnect.enrich;

import io.asofconnect.enrich.EnrichConfig.OutputMode;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.data.TrustedStruct;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;

import java.util.List;

/**
 * How to write one (input value schema, row schema) pair, resolved once: every source and target
 * {@link Field} looked up by name when the plan is made, so that writing a record is array walks and
 * {@link TrustedStruct} writes, with no name lookups, streams or lists per record. Immutable, so one
 * plan serves every thread.
 */
final class WritePlan {
    private final Schema input;
    private final Schema row;
    private final Schema output;
    /** The input's fields and, at the same index, the output field each is copied to. */
    private final Field[] inputFields;
    private final Field[] copiedTo;
    /** NESTED: the output field holding the nested struct, and its schema; FLATTEN: null, and the output schema. */
    private final Field nestedField;
    private final Schema target;
    /** The row's columns to copy and, at the same index, the target field each is written to. */
    private final Field[] columns;
    private final Field[] columnTargets;
    /** Whether a column's struct value must be rebuilt on the target's optional copy of its schema. */
    private final boolean[] conform;
    /** The version-metadata targets, or null when {@code enrich.version.metadata=false}. */
    private final Field validFromTarget;
    private final Field versionTarget;

    /**
     * @param row    the row schema to write, or null for a miss before any hit (no columns then)
     * @param output the output schema {@link OutputSchemas} derived for the pair
     */
    WritePlan(Schema input, Schema row, Schema output, List<String> columnNames, EnrichConfig config) {
        this.input = input;
        this.row = row;
        this.output = output;
        List<Field> in = input.fields();
        this.inputFields = in.toArray(new Field[0]);
        this.copiedTo = new Field[inputFields.length];
        for (int i = 0; i < inputFields.length; i++) {
            copiedTo[i] = output.field(inputFields[i].name());
        }
        String namePrefix;
        if (config.outputMode() == OutputMode.NESTED) {
            nestedField = output.field(config.outputField());
            target = nestedField.schema();
            namePrefix = "";
        } else {
            nestedField = null;
            target = output;
            namePrefix = config.outputPrefix();
        }
        int n = row == null ? 0 : columnNames.size();
        columns = new Field[n];
        columnTargets = new Field[n];
        conform = new boolean[n];
        for (int j = 0; j < n; j++) {
            columns[j] = row.field(columnNames.get(j));
            columnTargets[j] = target.field(namePrefix + columnNames.get(j));
            // A struct value carries its column's schema; equal to the target's, it can be written as it is.
            conform[j] = columns[j].schema().type() == Schema.Type.STRUCT
                    && !columns[j].schema().equals(columnTargets[j].schema());
        }
        if (config.versionMetadata()) {
            validFromTarget = target.field(namePrefix + EnrichConfig.VALID_FROM_COLUMN);
            versionTarget = target.field(namePrefix + EnrichConfig.VERSION_COLUMN);
        } else {
            validFromTarget = null;
            versionTarget = null;
        }
    }

    /** Whether this plan was made for exactly these schema instances. */
    boolean isFor(Schema input, Schema row) {
        return this.input == input && this.row == row;
    }

    Schema output() {
        return output;
    }

    /** {@code value} (of the plan's input schema) enriched from {@code version}, or with nulls when it is null. */
    Struct write(Struct value, Version version) {
        Struct result = new Struct(output);
        // Every output field is the input's own field or an optional copy of a row column's, and struct columns
        // are conformed to their copy's schema: each value fits its target, so Struct.put's check is skipped.
        Object[] slots = TrustedStruct.slots(result);
        // The record's value schema is nearly always the value's own; should they be distinct instances,
        // the fields' indexes may not match and the value is read by name, and checked by put, since the
        // value's schema may then differ from the one the plan was made for.
        boolean sameSchema = value.schema() == input;
        Object[] inputSlots = sameSchema ? slots : null;
        for (int i = 0; i < inputFields.length; i++) {
            Field f = inputFields[i];
            TrustedStruct.set(result, inputSlots, copiedTo[i], sameSchema ? withoutDefault(value, f) : value.getWithoutDefault(f.name()));
        }
        if (version == null) {
            return result;
        }
        if (nestedField != null) {
            Struct nested = new Struct(target);
            fill(nested, version);
            TrustedStruct.set(result, slots, nestedField, nested);
        } else {
            fill(result, version);
        }
        return result;
    }

    private void fill(Struct into, Version version) {
        Struct source = version.row();
        Object[] slots = TrustedStruct.slots(into);
        for (int j = 0; j < columns.length; j++) {
            Object v = withoutDefault(source, columns[j]);
            TrustedStruct.set(into, slots, columnTargets[j], conform[j] && v != null ? conformed((Struct) v, columnTargets[j].schema()) : v);
        }
        if (validFromTarget != null) {
            TrustedStruct.set(into, slots, validFromTarget, version.validFrom());
            TrustedStruct.set(into, slots, versionTarget, VersionIds.format(version));
        }
    }

    /**
     * The field's value as set, not its default: {@link Struct#get(Field)} (an array read) substitutes the
     * default for null, so only a field that has one goes through the lookup by name.
     */
    private static Object withoutDefault(Struct s, Field f) {
        return f.schema().defaultValue() == null ? s.get(f) : s.getWithoutDefault(f.name());
    }

    /** A struct column's value rebuilt on the target's optional copy of its schema. */
    private static Struct conformed(Struct s, Schema targetSchema) {
        Struct copy = new Struct(targetSchema);
        for (Field f : targetSchema.fields()) {
            copy.put(f, s.getWithoutDefault(f.name()));
        }
        return copy;
    }
}
