package io.asofconnect.common.lookup;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Struct;

/**
 * A secondary index a replica keeps: rows of {@code table} (as {@code schema.table}) by the values of
 * {@code columns}. Its text form, as {@code replica.indexes} takes it, is {@code schema.table(col1,col2)}.
 *
 * <p>{@link #valueOf} is the one place an index value is computed, by the store that indexes a row and by the
 * reader that probes the index with the other side's row, so both sides of a join see one canonical form
 * ({@link KeyValues#canonical}, then {@link RowKey}): an {@code int4} and an {@code int8} column holding 42
 * meet.
 */
public record IndexDeclaration(String table, List<String> columns) {

    public IndexDeclaration {
        if (table == null || table.isBlank() || !table.contains(".")) {
            throw new IllegalArgumentException("an index names its table as schema.table, not '" + table + "'");
        }
        if (columns == null || columns.isEmpty()) {
            throw new IllegalArgumentException("the index on " + table + " names no column");
        }
        columns = List.copyOf(columns);
    }

    /** Parses {@code schema.table(col1,col2)}. */
    public static IndexDeclaration parse(String text) {
        String s = text.trim();
        int open = s.indexOf('(');
        if (open <= 0 || !s.endsWith(")")) {
            throw new IllegalArgumentException("'" + text + "' is not an index: write schema.table(column[,column...])");
        }
        List<String> cols = new ArrayList<>();
        for (String c : s.substring(open + 1, s.length() - 1).split(",")) {
            if (c.isBlank()) {
                throw new IllegalArgumentException("'" + text + "' names an empty column: write schema.table(column[,column...])");
            }
            cols.add(c.trim());
        }
        return new IndexDeclaration(s.substring(0, open).trim(), cols);
    }

    /**
     * The index value of {@code row}, or null when the row does not carry every column or one of them is
     * null: such a row is not indexed, as SQL's {@code =} matches no NULL.
     */
    public RowKey valueOf(Struct row) {
        if (row == null) {
            return null;
        }
        List<Object> values = new ArrayList<>(columns.size());
        for (String column : columns) {
            Field f = row.schema().field(column);
            if (f == null) {
                return null;
            }
            Object v = row.get(f);
            if (v == null) {
                return null;
            }
            values.add(KeyValues.canonical(f.schema(), v));
        }
        return RowKey.of(values);
    }

    @Override
    public String toString() {
        return table + "(" + String.join(",", columns) + ")";
    }

    /** Case-insensitive on the table, as Debezium's include lists are. */
    public boolean covers(String otherTable) {
        return table.toLowerCase(Locale.ROOT).equals(otherTable.toLowerCase(Locale.ROOT));
    }
}
