package io.asofconnect.replica.capture;

import org.apache.kafka.connect.data.Schema;

import java.util.IdentityHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * What is derived from a schema, computed once per schema instance. Keyed by identity: Debezium hands out one
 * schema instance per table and schema version, while a {@code ConnectSchema}'s own {@code equals} and
 * {@code hashCode} walk the whole schema on every call. Bounded: when full it starts over, so schemas of
 * altered tables do not accumulate. Not thread-safe: one capture thread owns it.
 */
final class SchemaCache<V> {
    private final int capacity;
    private final Function<Schema, V> derive;
    private final Map<Schema, V> entries = new IdentityHashMap<>();
    private Schema lastSchema;
    private V lastValue;

    SchemaCache(int capacity, Function<Schema, V> derive) {
        this.capacity = capacity;
        this.derive = derive;
    }

    V get(Schema schema) {
        // Consecutive records nearly always share their schema: one comparison instead of a lookup.
        if (schema == lastSchema) {
            return lastValue;
        }
        V v = entries.get(schema);
        if (v == null) {
            if (entries.size() >= capacity) {
                entries.clear();
            }
            v = derive.apply(schema);
            entries.put(schema, v);
        }
        lastSchema = schema;
        lastValue = v;
        return v;
    }

    int size() {
        return entries.size();
    }
}
