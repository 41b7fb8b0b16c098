package io.asofconnect.common.data;

import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Struct;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Fills a {@link Struct} with values already known to fit its fields, without {@link Struct#put(Field, Object)}'s
 * check of each value against its field's schema. That check (a map lookup and class tests per field, recursive
 * for nested values) costs more than the rest of an as-of lookup: the store's decoder reads each value by its
 * field's schema, and the enrichment copies values into fields whose schemas are optional copies of their
 * sources', so for them the check can only repeat what they already guarantee. Everyone else uses {@code put}.
 *
 * <p>The values are written into the struct's own value array, reached through a private lookup (plugins and
 * Connect's API share the unnamed module, which opens every package). On a Kafka whose {@code Struct} has no
 * such array, {@link #set} falls back to {@code put}.
 */
public final class TrustedStruct {
    private static final VarHandle VALUES = valuesHandle();

    private TrustedStruct() {
    }

    private static VarHandle valuesHandle() {
        try {
            return MethodHandles.privateLookupIn(Struct.class, MethodHandles.lookup())
                    .findVarHandle(Struct.class, "values", Object[].class);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** The struct's value array, indexed by {@link Field#index()}, or null when only {@code put} is available. */
    public static Object[] slots(Struct struct) {
        return VALUES == null ? null : (Object[]) VALUES.get(struct);
    }

    /** Sets {@code field} of {@code struct} (whose {@link #slots} are {@code slots}) to a value known to fit it. */
    public static void set(Struct struct, Object[] slots, Field field, Object value) {
        if (slots != null) {
            slots[field.index()] = value;
        } else {
            struct.put(field, value);
        }
    }
}
