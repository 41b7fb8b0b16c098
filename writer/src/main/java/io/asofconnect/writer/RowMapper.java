package io.asofconnect.writer;

import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.sink.SinkRecord;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Turns a record into the row change it asks for, from a struct (schema'd) or a map (schemaless) value.
 * A {@link DataException} means this record cannot be written (it goes the errant-record path); messages
 * name fields and types, never values.
 */
final class RowMapper {
    static final String KAFKA_TOPIC = "__connect_topic";
    static final String KAFKA_PARTITION = "__connect_partition";
    static final String KAFKA_OFFSET = "__connect_offset";
    static final String DEFAULT_KEY_COLUMN = "__record_key";

    private final RowMappingRules rules;

    RowMapper(RowMappingRules rules) {
        this.rules = rules;
    }

    /** The table for a topic, checked: a name Postgres would truncate is a configuration error, not a record error. */
    String tableFor(String topic) {
        String table = rules.tableFor(topic);
        String problem = PostgresDialect.identifierProblem(table);
        if (problem != null) {
            throw new ConnectException("the table name " + WriterSettings.TABLE_NAME_FORMAT + " gives for topic '" + topic
                    + "' " + problem + "; change " + WriterSettings.TABLE_NAME_FORMAT);
        }
        return table;
    }

    /**
     * The change for this record, or null when it writes nothing (a tombstone with deletes off). With a changelog
     * operation field, a record whose operation deletes is a delete of its key's row whatever else its value holds.
     */
    RowChange map(SinkRecord r) {
        String table = tableFor(r.topic());
        List<Column> keyCols = new ArrayList<>();
        List<Object> keyVals = new ArrayList<>();
        if (r.value() == null) {
            if (!rules.deleteEnabled()) {
                return null;
            }
            keyFromRecordKey(r, keyCols, keyVals);
            return new RowChange(table, RowChange.Op.DELETE, keyCols, List.of(), keyVals, List.of());
        }
        String opField = rules.changelogOpField();
        if (opField != null && changelogOp(r, opField).deletes()) {
            keyFromRecordKey(r, keyCols, keyVals);
            return new RowChange(table, RowChange.Op.DELETE, keyCols, List.of(), keyVals, List.of());
        }
        List<Column> valueCols = new ArrayList<>();
        List<Object> values = new ArrayList<>();
        fields(r.valueSchema(), r.value(), "value", valueCols, values);
        if (opField != null) {
            // The operation is how to apply the row, not a column of it.
            int i = indexOf(valueCols, opField);
            valueCols.remove(i);
            values.remove(i);
        }
        switch (rules.primaryKeyMode()) {
            case NONE -> { }
            case KAFKA -> {
                keyCols.add(new Column(KAFKA_TOPIC, ValueKind.TEXT, false));
                // The original coordinates: an SMT that routes several topics into one would make the renamed ones collide.
                keyVals.add(r.originalTopic());
                keyCols.add(new Column(KAFKA_PARTITION, ValueKind.INT32, false));
                keyVals.add(r.originalKafkaPartition());
                keyCols.add(new Column(KAFKA_OFFSET, ValueKind.INT64, false));
                keyVals.add(r.originalKafkaOffset());
            }
            case RECORD_KEY -> keyFromRecordKey(r, keyCols, keyVals);
            case RECORD_VALUE -> {
                for (String f : rules.primaryKeyFields()) {
                    int i = indexOf(valueCols, f);
                    if (i < 0) {
                        throw new DataException("the record value has no primary key field '" + f + "' named in " + WriterSettings.PRIMARY_KEY_FIELDS);
                    }
                    if (values.get(i) == null) {
                        throw new DataException("the primary key field '" + f + "' is null in the record value");
                    }
                    keyCols.add(valueCols.remove(i));
                    keyVals.add(values.remove(i));
                }
            }
        }
        // A value field repeating a key column (a Debezium key {id} with value {id, ...}) is written once, from the key.
        Set<String> keyNames = new HashSet<>();
        keyCols.forEach(c -> keyNames.add(c.name()));
        for (int i = valueCols.size() - 1; i >= 0; i--) {
            if (keyNames.contains(valueCols.get(i).name())) {
                valueCols.remove(i);
                values.remove(i);
            }
        }
        if (keyCols.isEmpty() && valueCols.isEmpty()) {
            throw new DataException("the record value has no fields to write");
        }
        RowChange.Op op = rules.insertMode() == InsertMode.UPSERT ? RowChange.Op.UPSERT : RowChange.Op.INSERT;
        return new RowChange(table, op, keyCols, valueCols, keyVals, values);
    }

    /**
     * The operation a changelog record's value carries in {@code field}. A value without it, or with anything but
     * one of {@link ChangelogOp}'s short strings there, is a bad record: the message names the field and what it
     * must hold, never the value.
     */
    private static ChangelogOp changelogOp(SinkRecord r, String field) {
        Object op;
        if (r.value() instanceof Struct s) {
            Field f = s.schema().field(field);
            if (f == null) {
                throw missingOp(field);
            }
            op = s.get(f);
        } else if (r.value() instanceof Map<?, ?> m) {
            if (!m.containsKey(field)) {
                throw missingOp(field);
            }
            op = m.get(field);
        } else {
            throw new DataException("the record value is a " + r.value().getClass().getSimpleName() + "; with "
                    + WriterSettings.CHANGELOG_OP_FIELD + " set it must be a struct or a map holding the operation in '" + field + "'");
        }
        if (!(op instanceof String text)) {
            throw new DataException("the operation field '" + field + "' (" + WriterSettings.CHANGELOG_OP_FIELD + ") is "
                    + (op == null ? "null" : "a " + op.getClass().getSimpleName()) + "; expected a string: " + ChangelogOp.EXPECTED);
        }
        ChangelogOp parsed = ChangelogOp.of(text);
        if (parsed == null) {
            throw new DataException("the operation field '" + field + "' (" + WriterSettings.CHANGELOG_OP_FIELD
                    + ") holds none of " + ChangelogOp.shortStrings() + "; expected " + ChangelogOp.EXPECTED);
        }
        return parsed;
    }

    private static DataException missingOp(String field) {
        return new DataException("the record value has no operation field '" + field + "' named in "
                + WriterSettings.CHANGELOG_OP_FIELD + "; expected it to hold " + ChangelogOp.EXPECTED);
    }

    private void keyFromRecordKey(SinkRecord r, List<Column> cols, List<Object> vals) {
        Object key = r.key();
        if (key == null) {
            throw new DataException("the record key is null; " + WriterSettings.PRIMARY_KEY_MODE + "=RECORD_KEY needs a key");
        }
        Schema schema = r.keySchema();
        boolean structured = key instanceof Struct || key instanceof Map;
        if (!structured) {
            List<String> named = rules.primaryKeyFields();
            if (named.size() > 1) {
                throw new DataException("the record key is a single value but " + WriterSettings.PRIMARY_KEY_FIELDS + " names " + named.size() + " columns");
            }
            cols.add(new Column(named.isEmpty() ? DEFAULT_KEY_COLUMN : named.get(0), schema != null ? ValueKind.of(schema) : ValueKind.ofValue(key), false));
            vals.add(key);
            return;
        }
        List<Column> all = new ArrayList<>();
        List<Object> allVals = new ArrayList<>();
        fields(schema, key, "key", all, allVals);
        List<String> wanted = rules.primaryKeyFields().isEmpty() ? all.stream().map(Column::name).toList() : rules.primaryKeyFields();
        for (String f : wanted) {
            int i = indexOf(all, f);
            if (i < 0) {
                throw new DataException("the record key has no field '" + f + "' named in " + WriterSettings.PRIMARY_KEY_FIELDS);
            }
            if (allVals.get(i) == null) {
                throw new DataException("the primary key field '" + f + "' is null in the record key");
            }
            Column c = all.get(i);
            cols.add(new Column(c.name(), c.kind(), false));
            vals.add(allVals.get(i));
        }
        if (cols.isEmpty()) {
            throw new DataException("the record key has no fields");
        }
    }

    /** Appends the top-level fields of a struct or a map, in order. */
    private static void fields(Schema schema, Object value, String what, List<Column> cols, List<Object> vals) {
        if (value instanceof Struct s) {
            for (Field f : s.schema().fields()) {
                cols.add(new Column(f.name(), ValueKind.of(f.schema()), f.schema().isOptional()));
                vals.add(s.get(f));
            }
        } else if (value instanceof Map<?, ?> m) {
            Schema valueSchema = schema != null && schema.type() == Schema.Type.MAP ? schema.valueSchema() : null;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!(e.getKey() instanceof String name)) {
                    throw new DataException("the record " + what + " is a map with a non-string key; field names must be strings");
                }
                ValueKind kind = valueSchema != null ? ValueKind.of(valueSchema) : ValueKind.ofValue(e.getValue());
                cols.add(new Column(name, kind, true));
                vals.add(e.getValue());
            }
        } else {
            throw new DataException("the record " + what + " is a " + (value == null ? "null" : value.getClass().getSimpleName())
                    + "; expected a struct (with a schema) or a map (schemaless JSON)");
        }
        for (Column c : cols) {
            String problem = PostgresDialect.identifierProblem(c.name());
            if (problem != null) {
                throw new DataException("a field name of the record " + what + " " + problem);
            }
        }
    }

    private static int indexOf(List<Column> cols, String name) {
        for (int i = 0; i < cols.size(); i++) {
            if (cols.get(i).name().equals(name)) {
                return i;
            }
        }
        return -1;
    }
}
