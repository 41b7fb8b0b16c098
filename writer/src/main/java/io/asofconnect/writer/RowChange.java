package io.asofconnect.writer;

import java.util.List;

/**
 * The row one record asks for: an insert, an upsert or a delete on one table. Key columns come first;
 * for a delete there are no value columns.
 */
record RowChange(String table, Op op, List<Column> keyColumns, List<Column> valueColumns, List<Object> keyValues, List<Object> values) {

    enum Op { INSERT, UPSERT, DELETE }

    /** Changes with equal shapes share one prepared statement (and one JDBC batch when consecutive). */
    Shape shape() {
        return new Shape(table, op, keyColumns.stream().map(Column::name).toList(), valueColumns.stream().map(Column::name).toList());
    }

    record Shape(String table, Op op, List<String> keyNames, List<String> valueNames) {
    }
}
