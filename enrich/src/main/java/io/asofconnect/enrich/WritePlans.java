package io.asofconnect.enrich;

import org.apache.kafka.connect.data.Schema;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * The {@link WritePlan}s in use, keyed by the identity of their (input value schema, row schema) pair.
 *
 * <p>Identity, not equality: {@code Schema.equals} and {@code hashCode} walk every field, nested schemas
 * included, which cost more than writing the record. Converters and the replica hand out one schema
 * instance per shape, so identity finds the plan; an equal schema in another instance only costs one more
 * plan, whose output schema is still the one {@link OutputSchemas} caches by equality. The latest plan is
 * tried first without a lock (a stream is nearly always one pair); the others sit in a bounded LRU map.
 */
final class WritePlans {
    /** Plans kept besides the latest; a few per topic and table shape is the common case. */
    static final int CACHE_SIZE = OutputSchemas.CACHE_SIZE;

    private record IdentityPair(Schema input, Schema row) {
        @Override
        public boolean equals(Object o) {
            return o instanceof IdentityPair p && p.input == input && p.row == row;
        }

        @Override
        public int hashCode() {
            return 31 * System.identityHashCode(input) + System.identityHashCode(row);
        }
    }

    private final BiFunction<Schema, Schema, WritePlan> compiler;
    private final Map<IdentityPair, WritePlan> plans = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<IdentityPair, WritePlan> eldest) {
            return size() > CACHE_SIZE;
        }
    };
    private volatile WritePlan latest;

    /** @param compiler makes the plan of a pair not seen yet (row null: a miss before any hit) */
    WritePlans(BiFunction<Schema, Schema, WritePlan> compiler) {
        this.compiler = compiler;
    }

    WritePlan planFor(Schema input, Schema row) {
        WritePlan p = latest;
        if (p != null && p.isFor(input, row)) {
            return p;
        }
        synchronized (plans) {
            IdentityPair key = new IdentityPair(input, row);
            p = plans.get(key);
            if (p == null) {
                p = compiler.apply(input, row);
                plans.put(key, p);
            }
        }
        latest = p;
        return p;
    }

    void clear() {
        synchronized (plans) {
            plans.clear();
        }
        latest = null;
    }
}
