package io.asofconnect.writer;

import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Time;
import org.apache.kafka.connect.data.Timestamp;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.Map;

/**
 * What a column value is, as far as binding it and creating its column are concerned. Derived from the
 * Connect schema when the record has one, from the Java value otherwise (schemaless records).
 */
enum ValueKind {
    INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, TEXT, UUID, BYTES, DECIMAL, DATE, TIME, TIMESTAMP, JSON,
    /** Debezium's io.debezium.time.Date: INT32 days since the epoch. */
    EPOCH_DAYS,
    /** Debezium's io.debezium.time.Timestamp / MicroTimestamp: INT64 milli- or microseconds, local (no zone). */
    LOCAL_TIMESTAMP_MILLIS, LOCAL_TIMESTAMP_MICROS,
    /** Debezium's io.debezium.time.ZonedTimestamp: an ISO-8601 string with offset, bound as text. */
    ZONED_TIMESTAMP_TEXT,
    /** A schemaless null: bound as an untyped null, created as text. */
    UNKNOWN;

    static ValueKind of(Schema schema) {
        String logical = schema.name();
        if (logical != null) {
            switch (logical) {
                case Decimal.LOGICAL_NAME: return DECIMAL;
                case Date.LOGICAL_NAME: return DATE;
                case Time.LOGICAL_NAME: return TIME;
                case Timestamp.LOGICAL_NAME: return TIMESTAMP;
                // Debezium semantic types whose base type already binds right; the others map by base type.
                case "io.debezium.data.Json": return JSON;
                case "io.debezium.data.Uuid": return UUID;
                case "io.debezium.time.Date": return EPOCH_DAYS;
                case "io.debezium.time.Timestamp": return LOCAL_TIMESTAMP_MILLIS;
                case "io.debezium.time.MicroTimestamp": return LOCAL_TIMESTAMP_MICROS;
                case "io.debezium.time.ZonedTimestamp": return ZONED_TIMESTAMP_TEXT;
                default: break;
            }
        }
        return switch (schema.type()) {
            case INT8, INT16 -> INT16;
            case INT32 -> INT32;
            case INT64 -> INT64;
            case FLOAT32 -> FLOAT32;
            case FLOAT64 -> FLOAT64;
            case BOOLEAN -> BOOLEAN;
            case STRING -> TEXT;
            case BYTES -> BYTES;
            case STRUCT, MAP, ARRAY -> JSON;
        };
    }

    static ValueKind ofValue(Object value) {
        if (value == null) {
            return UNKNOWN;
        }
        if (value instanceof String) {
            return TEXT;
        }
        if (value instanceof Byte || value instanceof Short) {
            return INT16;
        }
        if (value instanceof Integer) {
            return INT32;
        }
        if (value instanceof Long) {
            return INT64;
        }
        if (value instanceof Float) {
            return FLOAT32;
        }
        if (value instanceof Double) {
            return FLOAT64;
        }
        if (value instanceof Boolean) {
            return BOOLEAN;
        }
        if (value instanceof BigDecimal) {
            return DECIMAL;
        }
        if (value instanceof byte[] || value instanceof ByteBuffer) {
            return BYTES;
        }
        if (value instanceof java.util.Date) {
            return TIMESTAMP;
        }
        if (value instanceof Map || value instanceof Collection || value instanceof org.apache.kafka.connect.data.Struct) {
            return JSON;
        }
        throw new org.apache.kafka.connect.errors.DataException("unsupported schemaless value type " + value.getClass().getName());
    }

    /** The Postgres column type created for this kind. */
    String postgresType() {
        return switch (this) {
            case INT16 -> "smallint";
            case INT32 -> "integer";
            case INT64 -> "bigint";
            case FLOAT32 -> "real";
            case FLOAT64 -> "double precision";
            case BOOLEAN -> "boolean";
            case TEXT, UNKNOWN -> "text";
            case UUID -> "uuid";
            case BYTES -> "bytea";
            case DECIMAL -> "numeric";
            case DATE, EPOCH_DAYS -> "date";
            case LOCAL_TIMESTAMP_MILLIS, LOCAL_TIMESTAMP_MICROS -> "timestamp";
            case ZONED_TIMESTAMP_TEXT -> "timestamptz";
            case TIME -> "time";
            case TIMESTAMP -> "timestamptz";
            case JSON -> "jsonb";
        };
    }
}
