package io.asofconnect.common.lookup;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
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
    /** The key itself: {@code count(4)}, then per component {@code length(4) UTF-8 bytes}. Never handed out. */
    private final byte[] encoded;
    private final int hash;

    private RowKey(byte[] encoded) {
        this.encoded = encoded;
        this.hash = hashOfEncoded(encoded, 0, encoded.length);
    }

    /** A key from its components, in key-column order. */
    public static RowKey of(Object... components) {
        if (components.length == 1) {
            // The common case, a one-column key: no list, no intermediate string for an integral key.
            return new RowKey(encodeOne(components[0]));
        }
        return of(Arrays.asList(components));
    }

    /** A key from its components, in key-column order. */
    public static RowKey of(List<?> components) {
        if (components.isEmpty()) {
            throw new IllegalArgumentException("a row key needs at least one component");
        }
        if (components.size() == 1) {
            return new RowKey(encodeOne(components.get(0)));
        }
        byte[][] parts = new byte[components.size()][];
        int size = 4;
        for (int i = 0; i < parts.length; i++) {
            parts[i] = normalise(i, components.get(i)).getBytes(StandardCharsets.UTF_8);
            size += 4 + parts[i].length;
        }
        ByteBuffer buf = ByteBuffer.allocate(size);
        buf.putInt(parts.length);
        for (byte[] b : parts) {
            buf.putInt(b.length).put(b);
        }
        return new RowKey(buf.array());
    }

    /** The inverse of {@link #encoded()}; the bytes are checked to be a key's encoding. */
    public static RowKey decode(byte[] encoded) {
        decodeParts(encoded);
        return new RowKey(encoded.clone());
    }

    private static List<String> decodeParts(byte[] encoded) {
        ByteBuffer buf = ByteBuffer.wrap(encoded);
        int n = buf.getInt();
        if (n <= 0) {
            throw new IllegalArgumentException("a row key encoding names " + n + " components");
        }
        List<String> parts = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            byte[] b = new byte[buf.getInt()];
            buf.get(b);
            parts.add(new String(b, StandardCharsets.UTF_8));
        }
        if (buf.hasRemaining()) {
            throw new IllegalArgumentException("trailing bytes after a row key's components");
        }
        return parts;
    }

    private static byte[] encodeOne(Object c) {
        if (c instanceof Long || c instanceof Integer || c instanceof Short || c instanceof Byte) {
            return encodeLong(((Number) c).longValue());
        }
        byte[] b = normalise(0, c).getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(8 + b.length).putInt(1).putInt(b.length).put(b).array();
    }

    /** {@code Long.toString(v)} as a one-component key, written straight into the encoding. */
    private static byte[] encodeLong(long v) {
        int digits = v < 0 ? 1 : 0;
        for (long rest = v; ; rest /= 10) {
            digits++;
            if (rest / 10 == 0) {
                break;
            }
        }
        byte[] out = new byte[8 + digits];
        out[3] = 1;
        out[7] = (byte) digits;
        int at = out.length;
        long rest = v;
        do {
            out[--at] = (byte) ('0' + Math.abs(rest % 10));
            rest /= 10;
        } while (rest != 0);
        if (v < 0) {
            out[--at] = '-';
        }
        return out;
    }

    private static String normalise(int i, Object c) {
        if (c == null) {
            throw new IllegalArgumentException("key component " + i + " is null; primary key columns cannot be null");
        }
        return normalise(c);
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

    /** The normalised components, in key-column order. */
    public List<String> components() {
        return Collections.unmodifiableList(decodeParts(encoded));
    }

    /** A stable byte form, used as the store's key; equal keys have equal encodings. */
    public byte[] encoded() {
        return encoded.clone();
    }

    /** The length of {@link #encoded()}, without copying it. */
    public int encodedLength() {
        return encoded.length;
    }

    /** {@link #hashOfEncoded} of this key's encoding, computed once. */
    public int encodedHash() {
        return hash;
    }

    /** Whether {@code bytes[from, to)} is this key's encoding: the store compares keys without copying either. */
    public boolean encodedEquals(byte[] bytes, int from, int to) {
        return Arrays.equals(encoded, 0, encoded.length, bytes, from, to);
    }

    /**
     * A hash of a key's encoding, spread over all 32 bits (consecutive numeric keys differ only in their
     * last byte, and an open-addressing table indexes by the high bits).
     */
    public static int hashOfEncoded(byte[] bytes, int from, int to) {
        int h = 1;
        for (int i = from; i < to; i++) {
            h = 31 * h + bytes[i];
        }
        h ^= h >>> 16;
        h *= 0x85ebca6b;
        h ^= h >>> 13;
        h *= 0xc2b2ae35;
        return h ^ (h >>> 16);
    }

    @Override
    public int compareTo(RowKey o) {
        return Arrays.compare(encoded, o.encoded);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RowKey k && k.hash == hash && Arrays.equals(k.encoded, encoded);
    }

    @Override
    public int hashCode() {
        return hash;
    }

    /** Key values are data: callers must not put this into logs at INFO or into exception messages. */
    @Override
    public String toString() {
        return "RowKey" + components();
    }
}
