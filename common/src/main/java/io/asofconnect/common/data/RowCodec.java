package io.asofconnect.common.data;

import io.asofconnect.common.data.TrustedStruct;
import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Time;
import org.apache.kafka.connect.data.Timestamp;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Encodes values by walking their schema; the schema itself is stored once, elsewhere
 * ({@link SchemaRegistry}). Integers are zig-zag varints, floats their raw IEEE bits (NaN payloads
 * kept), text UTF-8, bytes length-prefixed. A struct starts with a bitmap of its null fields (read with
 * {@code getWithoutDefault}, so a null stays null rather than becoming the field's default); array
 * elements and map entries carry a null marker each.
 *
 * <p>Connect's logical types are recognised by schema name: {@code Decimal} keeps its value's own scale
 * (so a value decodes to an equal {@link BigDecimal} even when its scale differs from the schema's
 * parameter), {@code Date}, {@code Time} and {@code Timestamp} are stored as their epoch milliseconds
 * and decode to {@link java.util.Date}. Debezium's semantic types ({@code io.debezium.time.*} and the
 * like) are plain named primitives or structs and need nothing special. Text is assumed to be valid
 * Unicode, as Postgres guarantees; a Java string with a lone surrogate would not round-trip.
 */
public final class RowCodec {
    private RowCodec() {
    }

    public static void writeStruct(Struct row, ByteSink out) {
        writeValue(row.schema(), row, out);
    }

    public static Struct readStruct(Schema schema, ByteSource in) {
        if (schema.type() != Schema.Type.STRUCT) {
            throw new MalformedEncodingException("row schema is " + schema.type() + ", expected STRUCT");
        }
        return (Struct) readValue(schema, in);
    }

    /** Writes a non-null value of {@code schema}. */
    public static void writeValue(Schema schema, Object value, ByteSink out) {
        String logical = schema.name();
        if (logical != null) {
            switch (logical) {
                case Decimal.LOGICAL_NAME -> {
                    if (schema.type() == Schema.Type.BYTES && value instanceof BigDecimal d) {
                        out.writeVarLong(d.scale());
                        out.writeBytesWithLength(d.unscaledValue().toByteArray());
                        return;
                    }
                }
                case Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME -> {
                    if (value instanceof java.util.Date d) {
                        out.writeVarLong(d.getTime());
                        return;
                    }
                }
                default -> {
                }
            }
        }
        switch (schema.type()) {
            case INT8 -> out.write((Byte) value);
            case INT16 -> out.writeVarLong((Short) value);
            case INT32 -> out.writeVarLong((Integer) value);
            case INT64 -> out.writeVarLong((Long) value);
            case FLOAT32 -> out.writeInt(Float.floatToRawIntBits((Float) value));
            case FLOAT64 -> out.writeLong(Double.doubleToRawLongBits((Double) value));
            case BOOLEAN -> out.write(((Boolean) value) ? 1 : 0);
            case STRING -> out.writeString((String) value);
            case BYTES -> writeBytes(value, out);
            case ARRAY -> {
                List<?> list = (List<?>) value;
                out.writeLength(list.size());
                for (Object element : list) {
                    writeNullable(schema.valueSchema(), element, out);
                }
            }
            case MAP -> {
                Map<?, ?> map = (Map<?, ?>) value;
                out.writeLength(map.size());
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    writeNullable(schema.keySchema(), e.getKey(), out);
                    writeNullable(schema.valueSchema(), e.getValue(), out);
                }
            }
            case STRUCT -> writeStructFields(schema, (Struct) value, out);
        }
    }

    private static void writeBytes(Object value, ByteSink out) {
        if (value instanceof byte[] b) {
            out.writeBytesWithLength(b);
        } else {
            ByteBuffer bb = ((ByteBuffer) value).duplicate();
            out.writeLength(bb.remaining());
            if (bb.hasArray()) {
                out.write(bb.array(), bb.arrayOffset() + bb.position(), bb.remaining());
            } else {
                byte[] b = new byte[bb.remaining()];
                bb.get(b);
                out.write(b);
            }
        }
    }

    private static void writeStructFields(Schema schema, Struct struct, ByteSink out) {
        List<Field> fields = schema.fields();
        int n = fields.size();
        Object[] values = new Object[n];
        int bitmapBytes = (n + 7) / 8;
        byte[] nulls = new byte[bitmapBytes];
        for (int i = 0; i < n; i++) {
            values[i] = struct.getWithoutDefault(fields.get(i).name());
            if (values[i] == null) {
                nulls[i >>> 3] |= (byte) (1 << (i & 7));
            }
        }
        out.write(nulls);
        for (int i = 0; i < n; i++) {
            if (values[i] != null) {
                writeValue(fields.get(i).schema(), values[i], out);
            }
        }
    }

    private static void writeNullable(Schema schema, Object value, ByteSink out) {
        if (value == null) {
            out.write(0);
        } else {
            out.write(1);
            writeValue(schema, value, out);
        }
    }

    /** Reads a non-null value of {@code schema}. */
    public static Object readValue(Schema schema, ByteSource in) {
        String logical = schema.name();
        if (logical != null) {
            switch (logical) {
                case Decimal.LOGICAL_NAME -> {
                    if (schema.type() == Schema.Type.BYTES) {
                        int scale = Math.toIntExact(in.readVarLong());
                        return new BigDecimal(new BigInteger(nonEmpty(in.readBytesWithLength())), scale);
                    }
                }
                case Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME -> {
                    if (schema.type() == Schema.Type.INT32 || schema.type() == Schema.Type.INT64) {
                        return new java.util.Date(in.readVarLong());
                    }
                }
                default -> {
                }
            }
        }
        return switch (schema.type()) {
            case INT8 -> (byte) in.read();
            case INT16 -> (short) checkRange(in.readVarLong(), Short.MIN_VALUE, Short.MAX_VALUE);
            case INT32 -> (int) checkRange(in.readVarLong(), Integer.MIN_VALUE, Integer.MAX_VALUE);
            case INT64 -> in.readVarLong();
            case FLOAT32 -> Float.intBitsToFloat(in.readInt());
            case FLOAT64 -> Double.longBitsToDouble(in.readLong());
            case BOOLEAN -> readBoolean(in);
            case STRING -> in.readString();
            case BYTES -> in.readBytesWithLength();
            case ARRAY -> {
                int n = in.readCount();
                List<Object> list = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    list.add(readNullable(schema.valueSchema(), in));
                }
                yield list;
            }
            case MAP -> {
                int n = in.readCount();
                Map<Object, Object> map = new LinkedHashMap<>();
                for (int i = 0; i < n; i++) {
                    Object k = readNullable(schema.keySchema(), in);
                    map.put(k, readNullable(schema.valueSchema(), in));
                }
                yield map;
            }
            case STRUCT -> readStructFields(schema, in);
        };
    }

    private static byte[] nonEmpty(byte[] unscaled) {
        if (unscaled.length == 0) {
            throw new MalformedEncodingException("decimal with no digits");
        }
        return unscaled;
    }

    private static long checkRange(long v, long min, long max) {
        if (v < min || v > max) {
            throw new MalformedEncodingException("integer " + v + " out of range for its type");
        }
        return v;
    }

    private static boolean readBoolean(ByteSource in) {
        int b = in.read();
        if (b > 1) {
            throw new MalformedEncodingException("bad boolean byte " + b);
        }
        return b == 1;
    }

    private static Struct readStructFields(Schema schema, ByteSource in) {
        List<Field> fields = schema.fields();
        int n = fields.size();
        int bitmapBytes = (n + 7) / 8;
        byte[] nulls = new byte[bitmapBytes];
        for (int i = 0; i < bitmapBytes; i++) {
            nulls[i] = (byte) in.read();
        }
        Struct struct = new Struct(schema);
        // Each value is read by its field's schema, so it fits it: no second check per field.
        Object[] slots = TrustedStruct.slots(struct);
        for (int i = 0; i < n; i++) {
            if ((nulls[i >>> 3] & (1 << (i & 7))) == 0) {
                Field f = fields.get(i);
                TrustedStruct.set(struct, slots, f, readValue(f.schema(), in));
            }
        }
        return struct;
    }

    private static Object readNullable(Schema schema, ByteSource in) {
        int marker = in.read();
        if (marker == 0) {
            return null;
        }
        if (marker != 1) {
            throw new MalformedEncodingException("bad null marker " + marker);
        }
        return readValue(schema, in);
    }
}
