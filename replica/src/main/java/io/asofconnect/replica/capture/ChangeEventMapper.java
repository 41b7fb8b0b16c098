package io.asofconnect.replica.capture;

import io.asofconnect.common.lookup.KeyValues;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.replica.config.ReplicaConfig;
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
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Turns one Debezium change event (ops c, u, d, r) into the table, key and version the store keeps.
 * The key's components are the key struct's fields in their order, which is the table's key-column order.
 *
 * <p>Everything that depends only on a schema (which fields hold the op, the source and the new row, which
 * columns could carry the unchanged-TOAST placeholder, the valid-from column) is resolved once per schema
 * instance ({@link SchemaCache}); per record only values are read, by field handle rather than by name. One
 * mapper belongs to one capture thread.
 */
public final class ChangeEventMapper {
    /** Debezium's default for {@code unavailable.value.placeholder}: an unchanged TOASTed column. */
    static final String UNAVAILABLE = "__debezium_unavailable_value";
    private static final byte[] UNAVAILABLE_BYTES = UNAVAILABLE.getBytes(StandardCharsets.UTF_8);
    /** Schemas of one replica: a few per table (one more after each ALTER), so this is generous. */
    private static final int SCHEMAS = 512;

    /** One mapped change. */
    public record Change(String table, RowKey key, Version version, boolean snapshot) {
    }

    private final ReplicaConfig.ValidFrom validFrom;
    private final String validFromColumn;
    private final ReplicaConfig.SnapshotValidFrom snapshotValidFrom;
    private final SchemaCache<Envelope> envelopes = new SchemaCache<>(SCHEMAS, Envelope::of);
    private final SchemaCache<Field[]> keys = new SchemaCache<>(SCHEMAS, s -> s.fields().toArray(new Field[0]));
    private final SchemaCache<RowShape> rows;

    public ChangeEventMapper(ReplicaConfig config) {
        this(config.validFrom(), config.validFromColumn(), config.snapshotValidFrom());
    }

    ChangeEventMapper(ReplicaConfig.ValidFrom validFrom, String validFromColumn, ReplicaConfig.SnapshotValidFrom snapshotValidFrom) {
        this.validFrom = validFrom;
        this.validFromColumn = validFromColumn;
        this.snapshotValidFrom = snapshotValidFrom;
        this.rows = new SchemaCache<>(SCHEMAS, s -> RowShape.of(s, validFrom == ReplicaConfig.ValidFrom.COLUMN ? validFromColumn : null));
    }

    /** The row change in {@code r}, or null when it is none (a heartbeat, a logical decoding message). */
    RowEvent read(SourceRecord r) {
        if (!(r.value() instanceof Struct v)) {
            return null;
        }
        Envelope e = envelopes.get(v.schema());
        if (e == null) {
            return null;
        }
        Object op = v.get(e.op);
        boolean delete = "d".equals(op);
        if (!delete && !"c".equals(op) && !"u".equals(op) && !"r".equals(op)) {
            return null;
        }
        Struct source = (Struct) v.get(e.source);
        Struct after = delete || e.after == null ? null : (Struct) v.get(e.after);
        return new RowEvent(r, source, after, e.table(source), e.lsn == null ? null : (Long) source.get(e.lsn),
                e.tsMs == null ? null : (Long) source.get(e.tsMs), e.isSnapshot(source), "u".equals(op));
    }

    /** The key of a row change: the one encoding of it, used both for the store and for {@link #map}'s ordinal. */
    RowKey key(RowEvent e) {
        if (!(e.record().key() instanceof Struct k)) {
            throw new DataException("change event of table " + e.table() + " has no key struct; the table needs a primary key or an"
                    + " entry in " + ReplicaConfig.KEY_COLUMNS);
        }
        Field[] fields = keys.get(k.schema());
        Object[] parts = new Object[fields.length];
        for (int i = 0; i < fields.length; i++) {
            Field f = fields[i];
            Object v = k.get(f);
            if (v == null) {
                throw new DataException("key column " + f.name() + " of table " + e.table() + " is null in a change event; key columns"
                        + " (see " + ReplicaConfig.KEY_COLUMNS + ") must be NOT NULL");
            }
            // The transform canonicalises the event's key the same way; without it date/timestamp keys never match.
            parts[i] = KeyValues.canonical(f.schema(), v);
        }
        // A view of the array: RowKey normalises the components into its own list anyway.
        return RowKey.of(Arrays.asList(parts));
    }

    /**
     * Maps a row change whose key {@link #key} computed. {@code ordinal} distinguishes changes of this one key
     * that share one LSN within a batch (the delete and create of a key update, a snapshot's rows), in batch
     * order; with the LSN it forms the version's position. {@code store} supplies the previous version for
     * columns Postgres did not send (unchanged TOASTed values).
     */
    Change map(RowEvent e, RowKey key, int ordinal, VersionStore store) {
        SourcePosition position = new SourcePosition(e.lsn() == null ? 0L : e.lsn(), ordinal);
        Struct after = e.after();
        RowShape shape = after == null ? null : rows.get(after.schema());
        long from = validFrom(e, after, shape);
        // Snapshot reads and inserts carry whole rows: only an update can leave an unchanged TOASTed value out.
        if (e.update() && shape.placeholderCandidates.length > 0) {
            after = fillUnavailable(after, shape, e.table(), key, position, store);
        }
        return new Change(e.table(), key, new Version(from, position, after), e.snapshot());
    }

    /** {@link #map(RowEvent, RowKey, int, VersionStore)} for a record not yet read; null when it is no row change. */
    public Change map(SourceRecord r, RowKey key, int ordinal, VersionStore store) {
        RowEvent e = read(r);
        return e == null ? null : map(e, key, ordinal, store);
    }

    /** The key of the row change in {@code r}, or null when it is none; for one-off use (it resolves the schemas anew). */
    public static RowKey key(SourceRecord r) {
        ChangeEventMapper m = new ChangeEventMapper(ReplicaConfig.ValidFrom.COMMIT_TIME, null, ReplicaConfig.SnapshotValidFrom.BEGINNING_OF_TIME);
        RowEvent e = m.read(r);
        return e == null ? null : m.key(e);
    }

    private long validFrom(RowEvent e, Struct after, RowShape shape) {
        if (e.readAtMs() == null) {
            throw new DataException("change event of table " + e.table() + " has no source.ts_ms");
        }
        long ts = e.readAtMs();
        if (e.snapshot()) {
            return snapshotValidFrom == ReplicaConfig.SnapshotValidFrom.BEGINNING_OF_TIME ? Version.BEGINNING_OF_TIME : ts;
        }
        // A delete has no new row to take a column from: it takes effect at its commit time.
        if (validFrom == ReplicaConfig.ValidFrom.COMMIT_TIME || after == null) {
            return ts;
        }
        Field f = shape.validFrom;
        if (f == null) {
            throw new DataException("table " + e.table() + " has no column " + validFromColumn + " named by " + ReplicaConfig.VALID_FROM_COLUMN);
        }
        Object v = after.get(f);
        if (v == null) {
            throw new DataException("column " + validFromColumn + " of table " + e.table() + " is null in a change event; "
                    + ReplicaConfig.VALID_FROM + "=COLUMN needs a NOT NULL column");
        }
        return toEpochMillis(v, f.schema(), e.table());
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
     * version with the greatest valid-from. Only columns whose type can hold the placeholder are looked at.
     */
    private static Struct fillUnavailable(Struct after, RowShape shape, String table, RowKey key, SourcePosition position,
                                          VersionStore store) {
        Struct previous = null;
        boolean loaded = false;
        Struct out = null;
        for (Field f : shape.placeholderCandidates) {
            if (!isPlaceholder(after.get(f))) {
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
            out.put(f, previous.get(f.name()));
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

    /** The fields of a change-event envelope schema, and the table name of its last record. */
    private static final class Envelope {
        final Field op;
        final Field source;
        final Field after;
        final Field schemaName;
        final Field tableName;
        final Field lsn;
        final Field tsMs;
        final Field snapshot;
        private String lastSchema;
        private String lastTable;
        private String lastName;

        private Envelope(Field op, Field source, Field after) {
            this.op = op;
            this.source = source;
            this.after = after;
            Schema s = source.schema();
            this.schemaName = s.field("schema");
            this.tableName = s.field("table");
            this.lsn = s.field("lsn");
            this.tsMs = s.field("ts_ms");
            this.snapshot = s.field("snapshot");
        }

        /** The envelope's fields, or null for a schema that is no row-change envelope. */
        static Envelope of(Schema value) {
            if (value.type() != Schema.Type.STRUCT) {
                return null;
            }
            Field op = value.field("op");
            Field source = value.field("source");
            if (op == null || source == null || source.schema().type() != Schema.Type.STRUCT) {
                return null;
            }
            return new Envelope(op, source, value.field("after"));
        }

        /** schema.table; the joined name is reused while the records of one table follow each other. */
        String table(Struct source) {
            Object schema = source.get(schemaName);
            Object table = source.get(tableName);
            if (lastName == null || !lastSchema.equals(schema) || !lastTable.equals(table)) {
                lastSchema = (String) schema;
                lastTable = (String) table;
                lastName = schema + "." + table;
            }
            return lastName;
        }

        boolean isSnapshot(Struct source) {
            if (snapshot == null) {
                return false;
            }
            Object s = source.get(snapshot);
            return s != null && !"false".equalsIgnoreCase(s.toString());
        }
    }

    /** Per schema of the new row: the valid-from column, and the columns whose type can carry the placeholder. */
    private record RowShape(Field validFrom, Field[] placeholderCandidates) {
        static RowShape of(Schema row, String validFromColumn) {
            Field[] candidates = row.fields().stream().filter(f -> canHoldPlaceholder(f.schema())).toArray(Field[]::new);
            return new RowShape(validFromColumn == null ? null : row.field(validFromColumn), candidates);
        }

        private static boolean canHoldPlaceholder(Schema s) {
            return switch (s.type()) {
                case STRING, BYTES -> true;
                case ARRAY -> canHoldPlaceholder(s.valueSchema());
                default -> false;
            };
        }
    }
}
