package io.asofconnect.replica.capture;

import io.asofconnect.lookup.KeyValues;
import io.asofconnect.lookup.RowKey;
import io.asofconnect.lookup.SourcePosition;
import io.asofconnect.lookup.Version;
import io.asofconnect.replica.ReplicaConfig;
import io.asofconnect.store.VersionStore;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.source.SourceRecord;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Turns one Debezium change event (ops c, u, d, r) into the table, key and version the store keeps.
 * The key's components are the key struct's fields in their order, which is the table's key-column order.
 */
public final class ChangeEventMapper {
    /** Debezium's default for {@code unavailable.value.placeholder}: an unchanged TOASTed column. */
    static final String UNAVAILABLE = "__debezium_unavailable_value";
    private static final byte[] UNAVAILABLE_BYTES = UNAVAILABLE.getBytes(StandardCharsets.UTF_8);

    /** One mapped change. */
    public record Change(String table, RowKey key, Version version, boolean snapshot) {
    }

    private final ReplicaConfig.ValidFrom validFrom;
    private final String validFromColumn;
    private final ReplicaConfig.SnapshotValidFrom snapshotValidFrom;

    public ChangeEventMapper(ReplicaConfig config) {
        this(config.validFrom(), config.validFromColumn(), config.snapshotValidFrom());
    }

    ChangeEventMapper(ReplicaConfig.ValidFrom validFrom, String validFromColumn, ReplicaConfig.SnapshotValidFrom snapshotValidFrom) {
        this.validFrom = validFrom;
        this.validFromColumn = validFromColumn;
        this.snapshotValidFrom = snapshotValidFrom;
    }

    /** Whether the record is a row change (rather than a heartbeat or a logical decoding message). */
    public static boolean isRowChange(SourceRecord r) {
        if (!(r.value() instanceof Struct v) || v.schema().field("op") == null || v.schema().field("source") == null) {
            return false;
        }
        String op = v.getString("op");
        return "c".equals(op) || "u".equals(op) || "d".equals(op) || "r".equals(op);
    }

    /** The table of a row change, as schema.table. */
    public static String table(SourceRecord r) {
        Struct source = ((Struct) r.value()).getStruct("source");
        return source.getString("schema") + "." + source.getString("table");
    }

    /** The key of a row change: the one encoding of it, used both for the store and for {@link #map}'s ordinal. */
    public static RowKey key(SourceRecord r) {
        return rowKey(r, table(r));
    }

    /**
     * Maps a row change whose key {@link #key} computed. {@code ordinal} distinguishes changes of this one key
     * that share one LSN within a batch (the delete and create of a key update, a snapshot's rows), in batch
     * order; with the LSN it forms the version's position. {@code store} supplies the previous version for
     * columns Postgres did not send (unchanged TOASTed values).
     */
    public Change map(SourceRecord r, RowKey key, int ordinal, VersionStore store) {
        Struct value = (Struct) r.value();
        Struct source = value.getStruct("source");
        String table = table(r);
        boolean snapshot = isSnapshot(source);
        String op = value.getString("op");
        Struct after = "d".equals(op) ? null : value.getStruct("after");
        long lsn = source.getInt64("lsn") == null ? 0L : source.getInt64("lsn");
        SourcePosition position = new SourcePosition(lsn, ordinal);
        long from = validFrom(source, after, snapshot, table);
        if (after != null) {
            after = fillUnavailable(after, table, key, position, store);
        }
        return new Change(table, key, new Version(from, position, after), snapshot);
    }

    private static RowKey rowKey(SourceRecord r, String table) {
        if (!(r.key() instanceof Struct k)) {
            throw new DataException("change event of table " + table + " has no key struct; the table needs a primary key or an"
                    + " entry in " + ReplicaConfig.KEY_COLUMNS);
        }
        List<Object> parts = new ArrayList<>();
        for (Field f : k.schema().fields()) {
            Object v = k.get(f);
            if (v == null) {
                throw new DataException("key column " + f.name() + " of table " + table + " is null in a change event; key columns"
                        + " (see " + ReplicaConfig.KEY_COLUMNS + ") must be NOT NULL");
            }
            // The transform canonicalises the event's key the same way; without it date/timestamp keys never match.
            parts.add(KeyValues.canonical(f.schema(), v));
        }
        return RowKey.of(parts);
    }

    static boolean isSnapshot(Struct source) {
        if (source.schema().field("snapshot") == null) {
            return false;
        }
        Object s = source.get("snapshot");
        return s != null && !"false".equalsIgnoreCase(s.toString());
    }

    private long validFrom(Struct source, Struct after, boolean snapshot, String table) {
        long ts = source.getInt64("ts_ms");
        if (snapshot) {
            return snapshotValidFrom == ReplicaConfig.SnapshotValidFrom.BEGINNING_OF_TIME ? Version.BEGINNING_OF_TIME : ts;
        }
        // A delete has no new row to take a column from: it takes effect at its commit time.
        if (validFrom == ReplicaConfig.ValidFrom.COMMIT_TIME || after == null) {
            return ts;
        }
        Field f = after.schema().field(validFromColumn);
        if (f == null) {
            throw new DataException("table " + table + " has no column " + validFromColumn + " named by " + ReplicaConfig.VALID_FROM_COLUMN);
        }
        Object v = after.get(f);
        if (v == null) {
            throw new DataException("column " + validFromColumn + " of table " + table + " is null in a change event; "
                    + ReplicaConfig.VALID_FROM + "=COLUMN needs a NOT NULL column");
        }
        return toEpochMillis(v, f.schema(), table);
    }

    /** Converts a Connect/Debezium temporal value to epoch milliseconds. */
    static long toEpochMillis(Object v, Schema schema, String table) {
        String logical = schema.name() == null ? "" : schema.name();
        if (v instanceof java.util.Date d) {
            return d.getTime();
        }
        if (v instanceof Long l) {
            return switch (logical) {
                case "io.debezium.time.MicroTimestamp" -> Math.floorDiv(l, 1000L);
                case "io.debezium.time.NanoTimestamp" -> Math.floorDiv(l, 1_000_000L);
                default -> l;
            };
        }
        if (v instanceof Integer i && "io.debezium.time.Date".equals(logical)) {
            return i * 86_400_000L;
        }
        if (v instanceof String s) {
            try {
                return OffsetDateTime.parse(s).toInstant().toEpochMilli();
            } catch (java.time.format.DateTimeParseException e) {
                try {
                    return Instant.parse(s).toEpochMilli();
                } catch (java.time.format.DateTimeParseException e2) {
                    throw new DataException("column " + schema.name() + " of table " + table + " is not a timestamp Debezium can"
                            + " represent as an instant; use timestamptz, timestamp or bigint epoch millis", e2);
                }
            }
        }
        throw new DataException("the valid-from column of table " + table + " has type " + schema.type()
                + (logical.isEmpty() ? "" : " (" + logical + ")") + "; use timestamptz, timestamp, date or bigint epoch millis");
    }

    /**
     * Postgres leaves an unchanged TOASTed column out of an update when the table's replica identity is
     * not FULL, and Debezium puts a placeholder there. The value is then the one of the change that preceded
     * this one in the source (greatest position below it), which under valid.from=COLUMN need not be the
     * version with the greatest valid-from.
     */
    private static Struct fillUnavailable(Struct after, String table, RowKey key, SourcePosition position, VersionStore store) {
        Struct previous = null;
        boolean loaded = false;
        Struct out = null;
        for (Field f : after.schema().fields()) {
            Object v = after.get(f);
            if (!isPlaceholder(v)) {
                continue;
            }
            if (!loaded) {
                previous = precedingInSource(store.history(table, key), position).map(Version::row).orElse(null);
                loaded = true;
            }
            if (previous == null || previous.schema().field(f.name()) == null) {
                throw new DataException("an update of table " + table + " left out column " + f.name() + " (an unchanged TOASTed"
                        + " value) and the replica holds no earlier version to take it from; set REPLICA IDENTITY FULL on the table");
            }
            if (out == null) {
                out = copy(after);
            }
            out.put(f.name(), previous.get(f.name()));
        }
        return out == null ? after : out;
    }

    /** The version with the greatest source position below {@code position}. */
    static Optional<Version> precedingInSource(List<Version> history, SourcePosition position) {
        Version best = null;
        for (Version v : history) {
            if (v.position().compareTo(position) < 0 && (best == null || v.position().compareTo(best.position()) > 0)) {
                best = v;
            }
        }
        return Optional.ofNullable(best);
    }

    private static boolean isPlaceholder(Object v) {
        if (v instanceof String s) {
            return UNAVAILABLE.equals(s);
        }
        if (v instanceof byte[] b) {
            return Arrays.equals(b, UNAVAILABLE_BYTES);
        }
        if (v instanceof ByteBuffer bb) {
            return bb.remaining() == UNAVAILABLE_BYTES.length && ByteBuffer.wrap(UNAVAILABLE_BYTES).equals(bb.duplicate());
        }
        if (v instanceof List<?> l) {
            return l.size() == 1 && isPlaceholder(l.get(0));
        }
        return false;
    }

    private static Struct copy(Struct s) {
        Struct c = new Struct(s.schema());
        for (Field f : s.schema().fields()) {
            c.put(f, s.get(f));
        }
        return c;
    }
}
