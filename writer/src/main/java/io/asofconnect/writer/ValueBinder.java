package io.asofconnect.writer;

import org.apache.kafka.connect.errors.DataException;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;

/**
 * Binds one Connect value as a statement parameter. Text (and JSON) goes as an untyped parameter so the
 * server casts it to the column's type: a string lands in a text, uuid, jsonb or enum column alike.
 */
final class ValueBinder {
    private ValueBinder() {
    }

    static void bind(PreparedStatement ps, int index, ValueKind kind, Object v) throws SQLException {
        if (v == null) {
            ps.setNull(index, Types.OTHER);
            return;
        }
        try {
            switch (kind) {
                case INT16 -> ps.setShort(index, ((Number) v).shortValue());
                case INT32 -> ps.setInt(index, ((Number) v).intValue());
                case INT64 -> ps.setLong(index, ((Number) v).longValue());
                case FLOAT32 -> ps.setFloat(index, ((Number) v).floatValue());
                case FLOAT64 -> ps.setDouble(index, ((Number) v).doubleValue());
                case BOOLEAN -> ps.setBoolean(index, (Boolean) v);
                case TEXT, UUID, UNKNOWN, ZONED_TIMESTAMP_TEXT -> ps.setObject(index, v.toString(), Types.OTHER);
                case EPOCH_DAYS -> ps.setObject(index, LocalDate.ofEpochDay(((Number) v).longValue()));
                case LOCAL_TIMESTAMP_MILLIS -> ps.setObject(index, LocalDateTime.ofInstant(Instant.ofEpochMilli(((Number) v).longValue()), ZoneOffset.UTC));
                case LOCAL_TIMESTAMP_MICROS -> {
                    long micros = ((Number) v).longValue();
                    Instant at = Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
                    ps.setObject(index, LocalDateTime.ofInstant(at, ZoneOffset.UTC));
                }
                case BYTES -> ps.setBytes(index, bytes(v));
                case DECIMAL -> ps.setBigDecimal(index, (BigDecimal) v);
                case DATE -> ps.setObject(index, LocalDate.ofInstant(((java.util.Date) v).toInstant(), ZoneOffset.UTC));
                case TIME -> ps.setObject(index, LocalTime.ofNanoOfDay(Math.floorMod(((java.util.Date) v).getTime(), 86_400_000L) * 1_000_000L));
                case TIMESTAMP -> ps.setObject(index, OffsetDateTime.ofInstant(((java.util.Date) v).toInstant(), ZoneOffset.UTC));
                case JSON -> ps.setObject(index, v instanceof String s ? s : JsonText.render(v), Types.OTHER);
            }
        } catch (ClassCastException e) {
            throw new DataException("parameter " + index + ": a " + v.getClass().getSimpleName() + " does not fit a " + kind + " column value");
        }
    }

    private static byte[] bytes(Object v) {
        if (v instanceof byte[] b) {
            return b;
        }
        ByteBuffer dup = ((ByteBuffer) v).duplicate();
        byte[] b = new byte[dup.remaining()];
        dup.get(b);
        return b;
    }
}
