package io.asofconnect.common.record;

import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.header.Header;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Date;

/** Reads a record's event time, in epoch millis, from where its time-source option says. */
public final class EventTimes {
    /** The three option names a time source is configured by, for messages. */
    public record Options(String source, String field, String header) {
    }

    private final TimeSource source;
    private final FieldPath field;
    private final String header;
    private final Options options;

    /** {@code field} is used with {@link TimeSource#FIELD}, {@code header} with {@link TimeSource#HEADER}. */
    public EventTimes(TimeSource source, FieldPath field, String header, Options options) {
        this.source = source;
        this.field = field;
        this.header = header;
        this.options = options;
    }

    public long of(ConnectRecord<?> record) {
        return switch (source) {
            case RECORD_TIMESTAMP -> {
                if (record.timestamp() == null) {
                    throw new DataException("the record has no timestamp, but " + options.source()
                            + "=RECORD_TIMESTAMP; set " + options.source() + " to FIELD or HEADER");
                }
                yield record.timestamp();
            }
            case FIELD -> {
                Object v = field.resolve(record.value(), options.field());
                if (v == null || v == FieldPath.MISSING) {
                    throw new DataException("the event-time field " + options.field() + "=" + field
                            + (v == null ? " is null" : " is missing") + " in the record value");
                }
                yield millis(v, options.field() + "=" + field);
            }
            case HEADER -> {
                Header h = record.headers().lastWithName(header);
                if (h == null || h.value() == null) {
                    throw new DataException("the event-time header " + options.header() + "=" + header
                            + (h == null ? " is missing" : " is null") + " in the record");
                }
                yield millis(h.value(), options.header() + "=" + header);
            }
        };
    }

    /** Epoch millis from a number, a string of digits, an ISO-8601 instant or offset date-time, or a Date. */
    public static long millis(Object v, String where) {
        if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) {
            return ((Number) v).longValue();
        }
        if (v instanceof Date d) {
            return d.getTime();
        }
        if (v instanceof String s) {
            String t = s.trim();
            if (!t.isEmpty() && t.chars().allMatch(ch -> Character.isDigit(ch) || ch == '-') && t.lastIndexOf('-') <= 0) {
                try {
                    return Long.parseLong(t);
                } catch (NumberFormatException e) {
                    throw new DataException("the event time in " + where + " is a string of digits out of the epoch-millis range");
                }
            }
            try {
                return Instant.parse(t).toEpochMilli();
            } catch (DateTimeParseException notInstant) {
                try {
                    return OffsetDateTime.parse(t).toInstant().toEpochMilli();
                } catch (DateTimeParseException e) {
                    throw new DataException("the event time in " + where + " is a string that is neither epoch millis nor"
                            + " an ISO-8601 instant or offset date-time (e.g. 2024-12-01T10:15:30Z or 2024-12-01T11:15:30+01:00)");
                }
            }
        }
        throw new DataException("the event time in " + where + " has type " + v.getClass().getName()
                + "; expected epoch millis (an integral number), an ISO-8601 string or a Connect Timestamp");
    }
}
