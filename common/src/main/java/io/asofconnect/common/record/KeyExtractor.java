package io.asofconnect.common.record;

import io.asofconnect.common.lookup.KeyValues;
import io.asofconnect.common.lookup.RowKey;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.DataException;

import java.util.ArrayList;
import java.util.List;

/**
 * Builds the join key from the record's key or value, or reports which key path is missing.
 *
 * <p>Each key value goes through {@link KeyValues#canonical} with its field's schema (null for schemaless
 * records) before {@link RowKey#of}, as the replica does with every key column: a date key sent as a
 * Connect {@code Date} or a Debezium {@code io.debezium.time.Date} and stored from a Postgres {@code date}
 * then meet in the same ISO text, a timestamp in the same epoch microseconds.
 */
public final class KeyExtractor {
    private final KeySource source;
    private final List<FieldPath> paths;
    private final FieldPath[] pathArray;
    /** Per path, where its value comes from, for messages: built once, not per record. */
    private final String[] pathWhere;
    private final String keyWhere;
    /** The option names, for messages. */
    private final String fieldsOption;
    private final String sourceOption;
    /** The key paths' schemas under the latest root schema seen (a stream nearly always has one). */
    private volatile PathSchemas latest;

    /** The schema of each key path's value under {@code root}, resolved once per root schema instance. */
    private record PathSchemas(Schema root, Schema[] schemas) {
    }

    /**
     * Reads the key from {@code source}: the whole record key when {@code paths} is empty, else the value at each
     * path. {@code sourceOption} and {@code fieldsOption} are the option names the user set, for messages.
     */
    public KeyExtractor(KeySource source, List<FieldPath> paths, String sourceOption, String fieldsOption) {
        this.source = source;
        this.paths = List.copyOf(paths);
        this.sourceOption = sourceOption;
        this.fieldsOption = fieldsOption;
        this.pathArray = this.paths.toArray(new FieldPath[0]);
        this.pathWhere = new String[pathArray.length];
        for (int i = 0; i < pathArray.length; i++) {
            pathWhere[i] = fieldsOption + " path " + pathArray[i];
        }
        this.keyWhere = fieldsOption + "=" + paths;
    }

    /**
     * The key, or {@code null} when a key field is missing or null (the caller applies
     * {@code enrich.on.missing.key}).
     *
     * @throws DataException when a key value has a type a primary key cannot have
     */
    public RowKey of(ConnectRecord<?> record) {
        Object root = source == KeySource.KEY ? record.key() : record.value();
        Schema rootSchema = source == KeySource.KEY ? record.keySchema() : record.valueSchema();
        if (pathArray.length == 0) {
            return root == null ? null
                    : toKey(List.of(canonical(rootSchema, root, "the record key")), "the record key");
        }
        Schema[] schemas = schemasUnder(rootSchema);
        if (pathArray.length == 1) {
            Object v = pathArray[0].resolve(root, fieldsOption);
            if (v == null || v == FieldPath.MISSING) {
                return null;
            }
            return toKey(List.of(canonical(schemas[0], v, pathWhere[0])), keyWhere);
        }
        List<Object> components = new ArrayList<>(pathArray.length);
        for (int i = 0; i < pathArray.length; i++) {
            Object v = pathArray[i].resolve(root, fieldsOption);
            if (v == null || v == FieldPath.MISSING) {
                return null;
            }
            components.add(canonical(schemas[i], v, pathWhere[i]));
        }
        return toKey(components, keyWhere);
    }

    private Schema[] schemasUnder(Schema rootSchema) {
        PathSchemas p = latest;
        if (p == null || p.root() != rootSchema) {
            Schema[] schemas = new Schema[pathArray.length];
            for (int i = 0; i < pathArray.length; i++) {
                schemas[i] = pathArray[i].schemaOf(rootSchema);
            }
            p = new PathSchemas(rootSchema, schemas);
            latest = p;
        }
        return p.schemas();
    }

    /** Which path is missing or null, for the message; never the values of the others. */
    public String describeMissing(ConnectRecord<?> record) {
        Object root = source == KeySource.KEY ? record.key() : record.value();
        if (paths.isEmpty()) {
            return "the record key is null (" + sourceOption + "=KEY)";
        }
        for (FieldPath p : paths) {
            Object v = p.resolve(root, fieldsOption);
            if (v == null || v == FieldPath.MISSING) {
                return "the key field " + fieldsOption + " path " + p + " is "
                        + (v == null ? "null" : "missing") + " in the record " + source.name().toLowerCase();
            }
        }
        return "a key field is missing";
    }

    private static Object canonical(Schema schema, Object value, String where) {
        try {
            return KeyValues.canonical(schema, value);
        } catch (ClassCastException | ArithmeticException e) {
            throw new DataException("cannot read " + where + " as a key value: its schema " + schema.name()
                    + " does not fit the value's type " + value.getClass().getName() + " (or the value is out of"
                    + " range); check the producer's schema for this field");
        }
    }

    private static RowKey toKey(List<Object> components, String where) {
        try {
            return RowKey.of(components);
        } catch (IllegalArgumentException e) {
            List<String> types = components.stream().map(c -> c.getClass().getName()).toList();
            throw new DataException("cannot use " + where + " as the key of the table: found types " + types
                    + "; key values must be numbers, strings, UUIDs, booleans, bytes or dates");
        }
    }
}
