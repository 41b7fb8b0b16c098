package io.asofconnect.lookup;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * The primary key of a replicated row, in a canonical form that does not depend on how the caller typed it.
 *
 * <p>A join key taken from an event rarely has the column's exact Java type: a JSON event carries
 * {@code 42} as a {@code Long} where the column is {@code int4}, a UUID arrives as a string. Each component
 * is therefore normalised to text: integral and decimal numbers to their plain decimal form without
 * trailing zeros ({@code 42}, {@code 42.0} and {@code 42L} are the same key), strings as they are except
 * that UUID-shaped strings are lower-cased (as Postgres treats uuid input; a text key column holding
 * two values that differ only in the case of a UUID is therefore not supported), {@link UUID}s in lower case, booleans as {@code true}/{@code false}, byte arrays as base64. A
 * {@code null} component is not allowed: a primary key has no nulls, and an event without its key
 * field is the caller's case to handle. Values typed by a schema (dates, timestamps) go through
 * {@link KeyValues#canonical} first.
 *
 * <p>Components are ordered as the table's key columns are.
 */
public final class RowKey implements Comparable<RowKey> {
    private static final Pattern UUID_SHAPE =
            Pattern.compile("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    private final List<String> components;
    private final byte[] encoded;

    private RowKey(List<String> components) {
        this.components = Collections.unmodifiableList(components);
        this.encoded = encode(components);
    }

    /** A key from its components, in key-column order. */
    public static RowKey of(Object... components) {
        return of(List.of(components));
    }

    /** A key from its components, in key-column order. */
    public static RowKey of(List<?> components) {
        if (components.isEmpty()) {
            throw new IllegalArgumentException("a row key needs at least one component");
        }
        List<String> normalised = new ArrayList<>(components.size());
        for (int i = 0; i < components.size(); i++) {
            Object c = components.get(i);
            if (c == null) {
                throw new IllegalArgumentException("key component " + i + " is null; primary key columns cannot be null");
            }
            normalised.add(normalise(c));
        }
        return new RowKey(normalised);
    }

    /** The inverse of {@link #encoded()}. */
    public static RowKey decode(byte[] encoded) {
        ByteBuffer buf = ByteBuffer.wrap(encoded);
        int n = buf.getInt();
        List<String> parts = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            byte[] b = new byte[buf.getInt()];
            buf.get(b);
            parts.add(new String(b, StandardCharsets.UTF_8));
        }
        return new RowKey(parts);
    }

    static String normalise(Object c) {
        if (c instanceof String s) {
            // Postgres reads uuid text in any case and Debezium writes it in lower case; an event may not.
            return UUID_SHAPE.matcher(s).matches() ? s.toLowerCase(Locale.ROOT) : s;
        }
        if (c instanceof Byte || c instanceof Short || c instanceof Integer || c instanceof Long) {
            return Long.toString(((Number) c).longValue());
        }
        if (c instanceof BigInteger bi) {
            return bi.toString();
        }
        if (c instanceof BigDecimal bd) {
            return plain(bd);
        }
        if (c instanceof Float || c instanceof Double) {
            double d = ((Number) c).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                return Double.toString(d);
            }
            return plain(BigDecimal.valueOf(d));
        }
        if (c instanceof UUID u) {
            return u.toString();
        }
        if (c instanceof Boolean b) {
            return b.toString();
        }
        if (c instanceof byte[] bytes) {
            return Base64.getEncoder().encodeToString(bytes);
        }
        if (c instanceof ByteBuffer bb) {
            ByteBuffer dup = bb.duplicate();
            byte[] bytes = new byte[dup.remaining()];
            dup.get(bytes);
            return Base64.getEncoder().encodeToString(bytes);
        }
        if (c instanceof java.util.Date d) {
            return Long.toString(d.getTime());
        }
        throw new IllegalArgumentException("unsupported key component type " + c.getClass().getName()
                + "; key columns must be numbers, strings, UUIDs, booleans, bytes or dates");
    }

    private static String plain(BigDecimal bd) {
        BigDecimal stripped = bd.stripTrailingZeros();
        return stripped.signum() == 0 ? "0" : stripped.toPlainString();
    }

    private static byte[] encode(List<String> parts) {
        List<byte[]> bytes = new ArrayList<>(parts.size());
        int size = 4;
        for (String p : parts) {
            byte[] b = p.getBytes(StandardCharsets.UTF_8);
            bytes.add(b);
            size += 4 + b.length;
        }
        ByteBuffer buf = ByteBuffer.allocate(size);
        buf.putInt(parts.size());
        for (byte[] b : bytes) {
            buf.putInt(b.length).put(b);
        }
        return buf.array();
    }

    /** The normalised components, in key-column order. */
    public List<String> components() {
        return components;
    }

    /** A stable byte form, used as the store's key; equal keys have equal encodings. */
    public byte[] encoded() {
        return encoded.clone();
    }

    @Override
    public int compareTo(RowKey o) {
        return java.util.Arrays.compare(encoded, o.encoded);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RowKey k && components.equals(k.components);
    }

    @Override
    public int hashCode() {
        return Objects.hash(components);
    }

    /** Key values are data: callers must not put this into logs at INFO or into exception messages. */
    @Override
    public String toString() {
        return "RowKey" + components;
    }
}
