package io.asofconnect.common.record;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;

import java.util.List;
import java.util.Map;

/**
 * A dotted path into a record's key or value ({@code after.customer_id}), walked through {@link Struct}s
 * and {@link Map}s alike so that the schema'd and the schemaless paths resolve fields the same way.
 */
public final class FieldPath {
    /** What {@link #resolve} returns when a segment of the path is not there (as opposed to a null value). */
    public static final Object MISSING = new Object() {
        @Override
        public String toString() {
            return "MISSING";
        }
    };

    private final String text;
    /** An array, walked by index: a list's iterator per call was most of a key extraction's garbage. */
    private final String[] segments;

    private FieldPath(String text, String[] segments) {
        this.text = text;
        this.segments = segments;
    }

    /** Parses {@code a.b.c}; blank segments ({@code a..b}, a leading or trailing dot) are rejected. */
    public static FieldPath parse(String key, String text) {
        if (text == null || text.isBlank()) {
            throw new ConfigException(key, text, "a field path must not be empty; use dotted names such as after.customer_id");
        }
        String[] parts = text.trim().split("\\.", -1);
        for (String p : parts) {
            if (p.isBlank()) {
                throw new ConfigException(key, text, "a field path must not have empty segments; use dotted names such as after.customer_id");
            }
        }
        return new FieldPath(text.trim(), parts);
    }

    /**
     * The value at this path, {@code null} when a segment holds null (a Debezium delete's {@code after}),
     * or {@link #MISSING} when a segment does not exist.
     *
     * @throws DataException when a segment other than the last holds something that is neither a Struct
     *                       nor a Map; the message names {@code key}, the path and the type found
     */
    public Object resolve(Object root, String key) {
        Object current = root;
        for (String segment : segments) {
            if (current == null) {
                return null;
            }
            if (current instanceof Struct struct) {
                Field f = struct.schema().field(segment);
                if (f == null) {
                    return MISSING;
                }
                // get(Field) reads the value by index but puts the default in for null; only a field with a
                // default needs the second lookup, by name, that reads the value as set.
                current = f.schema().defaultValue() == null ? struct.get(f) : struct.getWithoutDefault(segment);
            } else if (current instanceof Map<?, ?> map) {
                if (!map.containsKey(segment)) {
                    return MISSING;
                }
                current = map.get(segment);
            } else {
                throw new DataException("cannot resolve " + key + "=" + text + ": segment '" + segment
                        + "' is looked up in a value of type " + current.getClass().getName()
                        + ", but only Struct and Map values have fields");
            }
        }
        return current;
    }

    /**
     * The schema of the value at this path when {@code root} (a record's key or value schema) describes it
     * through structs all the way; null when {@code root} is null (schemaless) or a segment is not a struct field.
     */
    public Schema schemaOf(Schema root) {
        Schema current = root;
        for (String segment : segments) {
            if (current == null || current.type() != Schema.Type.STRUCT) {
                return null;
            }
            Field f = current.field(segment);
            if (f == null) {
                return null;
            }
            current = f.schema();
        }
        return current;
    }

    @Override
    public String toString() {
        return text;
    }

    /** Accepts a valid path, or null when {@code nullable}. */
    public static ConfigDef.Validator validator(boolean nullable) {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value == null && nullable) {
                    return;
                }
                parse(name, value == null ? null : value.toString());
            }

            @Override
            public String toString() {
                return "a dotted field path such as after.customer_id" + (nullable ? " (or unset)" : "");
            }
        };
    }

    /** Accepts a list of valid paths (possibly empty). */
    public static ConfigDef.Validator listValidator() {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value instanceof List<?> list) {
                    for (Object o : list) {
                        parse(name, o == null ? null : o.toString());
                    }
                }
            }

            @Override
            public String toString() {
                return "a comma-separated list of dotted field paths such as after.customer_id";
            }
        };
    }
}
