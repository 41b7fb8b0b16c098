package io.asofconnect.writer;

import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Struct;

import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.Collection;
import java.util.Map;

/**
 * Renders a nested Connect value (struct, map, array) as JSON text for a jsonb column. Hand-written so the
 * plugin does not depend on a Jackson that the worker may load differently.
 */
final class JsonText {
    private JsonText() {
    }

    static String render(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value);
        return sb.toString();
    }

    private static void write(StringBuilder sb, Object v) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Struct s) {
            sb.append('{');
            boolean first = true;
            for (Field f : s.schema().fields()) {
                first = comma(sb, first);
                string(sb, f.name());
                sb.append(':');
                write(sb, s.get(f));
            }
            sb.append('}');
        } else if (v instanceof Map<?, ?> m) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                first = comma(sb, first);
                string(sb, String.valueOf(e.getKey()));
                sb.append(':');
                write(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof Collection<?> c) {
            sb.append('[');
            boolean first = true;
            for (Object o : c) {
                first = comma(sb, first);
                write(sb, o);
            }
            sb.append(']');
        } else if (v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Float f && (f.isNaN() || f.isInfinite()) || v instanceof Double d && (d.isNaN() || d.isInfinite())) {
            string(sb, v.toString());
        } else if (v instanceof Number n) {
            sb.append(n instanceof java.math.BigDecimal bd ? bd.toPlainString() : n.toString());
        } else if (v instanceof byte[] b) {
            string(sb, Base64.getEncoder().encodeToString(b));
        } else if (v instanceof ByteBuffer bb) {
            ByteBuffer dup = bb.duplicate();
            byte[] b = new byte[dup.remaining()];
            dup.get(b);
            string(sb, Base64.getEncoder().encodeToString(b));
        } else if (v instanceof java.util.Date d) {
            string(sb, d.toInstant().toString());
        } else {
            string(sb, v.toString());
        }
    }

    private static boolean comma(StringBuilder sb, boolean first) {
        if (!first) {
            sb.append(',');
        }
        return false;
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            switch (ch) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    if (ch < 0x20) {
                        sb.append(String.format("\\u%04x", (int) ch));
                    } else {
                        sb.append(ch);
                    }
                }
            }
        }
        sb.append('"');
    }
}
