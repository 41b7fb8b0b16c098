package io.asofconnect.common.lookup;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.Date;

/**
 * Brings a key column's value to the one form both sides of a join use, whichever way it was typed.
 *
 * <p>The replica sees key columns as Debezium types them (a {@code date} as days since the epoch, a
 * {@code timestamp} as microseconds, a {@code uuid} as text); an event carries the same key as a
 * Connect {@code Date}, a Connect {@code Timestamp}, an ISO string or a number. Without one canonical
 * form such keys would silently never match. The forms: dates as ISO {@code yyyy-MM-dd} text,
 * timestamps without time zone as epoch microseconds, Debezium's variable-scale decimals as
 * {@link BigDecimal}; everything else as {@link RowKey} normalises it.
 *
 * <p>Values without a schema (schemaless events) cannot say they are dates: send date keys as ISO
 * strings there.
 */
public final class KeyValues {
    private static final String CONNECT_DATE = "org.apache.kafka.connect.data.Date";
    private static final String CONNECT_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp";
    private static final String DBZ_DATE = "io.debezium.time.Date";
    private static final String DBZ_TIMESTAMP = "io.debezium.time.Timestamp";
    private static final String DBZ_MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp";
    private static final String DBZ_NANO_TIMESTAMP = "io.debezium.time.NanoTimestamp";
    private static final String DBZ_VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal";

    private KeyValues() {
    }

    /** The canonical form of {@code value}, a key column's value described by {@code schema} (which may be null). */
    public static Object canonical(Schema schema, Object value) {
        if (value == null || schema == null || schema.name() == null) {
            return value;
        }
        switch (schema.name()) {
            case DBZ_DATE:
                return LocalDate.ofEpochDay(((Number) value).longValue()).toString();
            case CONNECT_DATE:
                return ((Date) value).toInstant().atZone(ZoneOffset.UTC).toLocalDate().toString();
            case DBZ_TIMESTAMP:
                return Math.multiplyExact(((Number) value).longValue(), 1000L);
            case CONNECT_TIMESTAMP:
                return Math.multiplyExact(((Date) value).getTime(), 1000L);
            case DBZ_MICRO_TIMESTAMP:
                return ((Number) value).longValue();
            case DBZ_NANO_TIMESTAMP:
                return Math.floorDiv(((Number) value).longValue(), 1000L);
            case DBZ_VARIABLE_SCALE_DECIMAL:
                if (value instanceof Struct s) {
                    Object bytes = s.get("value");
                    byte[] unscaled = bytes instanceof ByteBuffer bb ? toArray(bb) : (byte[]) bytes;
                    return new BigDecimal(new BigInteger(unscaled), s.getInt32("scale"));
                }
                return value;
            default:
                return value;
        }
    }

    private static byte[] toArray(ByteBuffer bb) {
        ByteBuffer d = bb.duplicate();
        byte[] b = new byte[d.remaining()];
        d.get(b);
        return b;
    }
}
