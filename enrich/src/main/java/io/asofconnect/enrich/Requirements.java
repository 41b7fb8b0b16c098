package io.asofconnect.enrich;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;

import java.util.Map;

/** Type checks whose messages name the operation and the type found, never the value. */
final class Requirements {
    private Requirements() {
    }

    static Struct requireStruct(Schema schema, Object value, String purpose) {
        if (schema.type() != Schema.Type.STRUCT || !(value instanceof Struct s)) {
            throw new DataException("only Struct values with a STRUCT schema can be used for [" + purpose + "], found schema type "
                    + schema.type() + " and value type " + className(value));
        }
        return s;
    }

    static Map<?, ?> requireMap(Object value, String purpose) {
        if (!(value instanceof Map<?, ?> m)) {
            throw new DataException("only Map values can be used for [" + purpose + "] in the absence of a value schema,"
                    + " found " + className(value));
        }
        return m;
    }

    private static String className(Object o) {
        return o == null ? "null" : o.getClass().getName();
    }
}
