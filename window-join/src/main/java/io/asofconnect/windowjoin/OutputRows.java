package io.asofconnect.windowjoin;

import io.asofconnect.windowjoin.state.HeldRecord;
import io.asofconnect.windowjoin.state.Side;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.sink.SinkRecord;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Builds the join's output rows as records for the writer. Every row is keyed by its inputs' coordinates,
 * {@code (__partition, __left_offset, __right_offset)} with -1 for a missing side, so the key is a function of the
 * input and a replay produces the same rows; {@code __match} says which sides are present, {@code __left_time} and
 * {@code __right_time} their event times; then each side's top-level value fields under the side's prefix, all
 * nullable. An unmatched row carries only its own side's fields: the other side's columns stay NULL.
 */
final class OutputRows {
    public static final String PARTITION = "__partition";
    public static final String LEFT_OFFSET = "__left_offset";
    public static final String RIGHT_OFFSET = "__right_offset";
    public static final String MATCH = "__match";
    public static final String LEFT_TIME = "__left_time";
    public static final String RIGHT_TIME = "__right_time";
    public static final List<String> KEY = List.of(PARTITION, LEFT_OFFSET, RIGHT_OFFSET);
    /** {@code __match} of a row with both sides, with the left only, with the right only. */
    public static final String MATCHED = "MATCHED";
    public static final String LEFT_ONLY = "LEFT_ONLY";
    public static final String RIGHT_ONLY = "RIGHT_ONLY";
    static final long MISSING_OFFSET = -1L;

    private record Shape(Schema left, Schema right) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Shape s && s.left == left && s.right == right;
        }

        @Override
        public int hashCode() {
            return 31 * System.identityHashCode(left) + System.identityHashCode(right);
        }
    }

    private final String topic;
    private final String leftPrefix;
    private final String rightPrefix;
    private final Map<Shape, Schema> schemas = new HashMap<>();

    /** {@code topic} is what the rows say they came from; the writer maps it to the output table. */
    OutputRows(String topic, String leftPrefix, String rightPrefix) {
        this.topic = topic;
        this.leftPrefix = leftPrefix;
        this.rightPrefix = rightPrefix;
    }

    SinkRecord matched(int partition, HeldRecord left, HeldRecord right) {
        return row(partition, left, right, MATCHED);
    }

    SinkRecord unmatched(int partition, HeldRecord rec) {
        return rec.side() == Side.LEFT ? row(partition, rec, null, LEFT_ONLY) : row(partition, null, rec, RIGHT_ONLY);
    }

    private SinkRecord row(int partition, HeldRecord left, HeldRecord right, String match) {
        Schema leftSchema = left == null ? null : left.value().schema();
        Schema rightSchema = right == null ? null : right.value().schema();
        Schema schema = schemas.computeIfAbsent(new Shape(leftSchema, rightSchema), s -> build(s.left(), s.right()));
        Struct out = new Struct(schema)
                .put(PARTITION, partition)
                .put(LEFT_OFFSET, left == null ? MISSING_OFFSET : left.offset())
                .put(RIGHT_OFFSET, right == null ? MISSING_OFFSET : right.offset())
                .put(MATCH, match)
                .put(LEFT_TIME, left == null ? null : left.time())
                .put(RIGHT_TIME, right == null ? null : right.time());
        copy(left, leftPrefix, out);
        copy(right, rightPrefix, out);
        long offset = left != null ? left.offset() : right.offset();
        return new SinkRecord(topic, partition, null, null, schema, out, offset);
    }

    private static void copy(HeldRecord rec, String prefix, Struct out) {
        if (rec == null) {
            return;
        }
        for (Field f : rec.value().schema().fields()) {
            out.put(prefix + f.name(), rec.value().get(f));
        }
    }

    private Schema build(Schema left, Schema right) {
        SchemaBuilder b = SchemaBuilder.struct().name("io.asofconnect.windowjoin.Row")
                .field(PARTITION, Schema.INT32_SCHEMA)
                .field(LEFT_OFFSET, Schema.INT64_SCHEMA)
                .field(RIGHT_OFFSET, Schema.INT64_SCHEMA)
                .field(MATCH, Schema.STRING_SCHEMA)
                .field(LEFT_TIME, Schema.OPTIONAL_INT64_SCHEMA)
                .field(RIGHT_TIME, Schema.OPTIONAL_INT64_SCHEMA);
        addFields(b, left, leftPrefix);
        addFields(b, right, rightPrefix);
        return b.build();
    }

    private static void addFields(SchemaBuilder b, Schema side, String prefix) {
        if (side == null) {
            return;
        }
        for (Field f : side.fields()) {
            String name = prefix + f.name();
            if (b.field(name) != null) {
                throw new IllegalStateException("two fields would become column " + name);
            }
            b.field(name, OptionalSchemas.of(f.schema()));
        }
    }

    /** For messages: the output table's key of a row. */
    static String describe(SinkRecord row) {
        Struct s = (Struct) row.value();
        return Objects.toString(s.get(PARTITION)) + "/" + s.get(LEFT_OFFSET) + "/" + s.get(RIGHT_OFFSET);
    }
}
