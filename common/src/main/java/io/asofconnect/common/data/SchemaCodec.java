package io.asofconnect.common.data;

import org.apache.kafka.connect.data.ConnectSchema;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Encodes a Connect {@link Schema} completely (type, optionality, name, version, doc, parameters,
 * default value, fields / element schemas), so that decoding gives back a schema {@code equals} to the
 * original. Parameters are written in key order, which makes the encoding canonical: equal schemas have
 * equal bytes, and the bytes can be fingerprinted.
 *
 * <p>Layout: {@code type(1) optional(1) name? version? doc? parameters children default?} where
 * {@code x?} is a presence byte then x, parameters are a count (0 = none, n+1 = n entries, so that "no
 * map" and "empty map" stay apart, as {@code ConnectSchema#equals} tells them apart) and children are
 * the struct's fields (count, then name and schema each), the array's element schema, or the map's key
 * and value schemas.
 */
public final class SchemaCodec {
    private static final Schema.Type[] TYPES = Schema.Type.values();

    private SchemaCodec() {
    }

    public static byte[] encode(Schema schema) {
        ByteSink out = new ByteSink(64);
        write(schema, out);
        return out.toByteArray();
    }

    public static Schema decode(byte[] bytes, int offset) {
        ByteSource in = new ByteSource(bytes, offset);
        Schema s = read(in);
        if (!in.atEnd()) {
            throw new MalformedEncodingException("schema encoding has trailing bytes at " + in.position());
        }
        return s;
    }

    private static void write(Schema s, ByteSink out) {
        out.write(s.type().ordinal());
        out.write(s.isOptional() ? 1 : 0);
        out.writeNullableString(s.name());
        if (s.version() == null) {
            out.write(0);
        } else {
            out.write(1).writeVarLong(s.version());
        }
        out.writeNullableString(s.doc());
        Map<String, String> params = s.parameters();
        if (params == null) {
            out.writeLength(0);
        } else {
            out.writeLength(params.size() + 1);
            for (Map.Entry<String, String> e : new TreeMap<>(params).entrySet()) {
                out.writeString(e.getKey());
                out.writeNullableString(e.getValue());
            }
        }
        switch (s.type()) {
            case STRUCT -> {
                out.writeLength(s.fields().size());
                for (Field f : s.fields()) {
                    out.writeString(f.name());
                    write(f.schema(), out);
                }
            }
            case ARRAY -> write(s.valueSchema(), out);
            case MAP -> {
                write(s.keySchema(), out);
                write(s.valueSchema(), out);
            }
            default -> {
            }
        }
        if (s.defaultValue() == null) {
            out.write(0);
        } else {
            out.write(1);
            RowCodec.writeValue(s, s.defaultValue(), out);
        }
    }

    private static Schema read(ByteSource in) {
        int t = in.read();
        if (t >= TYPES.length) {
            throw new MalformedEncodingException("unknown schema type " + t);
        }
        Schema.Type type = TYPES[t];
        boolean optional = readFlag(in);
        String name = in.readNullableString();
        Integer version = readFlag(in) ? Math.toIntExact(in.readVarLong()) : null;
        String doc = in.readNullableString();
        int paramCount = in.readCount();
        Map<String, String> params = null;
        if (paramCount > 0) {
            params = new LinkedHashMap<>();
            for (int i = 0; i < paramCount - 1; i++) {
                params.put(in.readString(), in.readNullableString());
            }
        }
        List<Field> fields = null;
        Schema keySchema = null;
        Schema valueSchema = null;
        switch (type) {
            case STRUCT -> {
                int n = in.readCount();
                fields = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    String fieldName = in.readString();
                    fields.add(new Field(fieldName, i, read(in)));
                }
            }
            case ARRAY -> valueSchema = read(in);
            case MAP -> {
                keySchema = read(in);
                valueSchema = read(in);
            }
            default -> {
            }
        }
        ConnectSchema withoutDefault = new ConnectSchema(type, optional, null, name, version, doc, params, fields, keySchema, valueSchema);
        if (!readFlag(in)) {
            return withoutDefault;
        }
        Object defaultValue = RowCodec.readValue(withoutDefault, in);
        return new ConnectSchema(type, optional, defaultValue, name, version, doc, params, fields, keySchema, valueSchema);
    }

    private static boolean readFlag(ByteSource in) {
        int b = in.read();
        if (b > 1) {
            throw new MalformedEncodingException("bad flag byte " + b + " at " + (in.position() - 1));
        }
        return b == 1;
    }
}
