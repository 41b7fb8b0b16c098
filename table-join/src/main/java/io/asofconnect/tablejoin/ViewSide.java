package io.asofconnect.tablejoin;

import io.asofconnect.common.lookup.IndexDeclaration;
import io.asofconnect.common.lookup.Version;

import java.util.List;
import java.util.Optional;

import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Struct;

/**
 * One table of the view: its name, the columns it joins on (in pair order with the other side's), the equality
 * filters that restrict it before the join, and whether its changes can only be inserts.
 *
 * @param name the table's name without its schema: how {@code view.columns} and {@code view.filter} name it
 */
public record ViewSide(String table, String name, List<String> joinColumns, List<Filter> filters, boolean insertOnly) {

    /** {@code column = literal}, compared as text (the literal as written, the column's value as {@code String.valueOf}). */
    public record Filter(String column, String literal) {
    }

    public ViewSide {
        joinColumns = List.copyOf(joinColumns);
        filters = List.copyOf(filters);
    }

    /** The index the replica keeps on this side's join columns. */
    public IndexDeclaration index() {
        return new IndexDeclaration(table, joinColumns);
    }

    /** The row of {@code version} when it is in this side's input: not a tombstone, and passing every filter; else null. */
    public Struct present(Optional<Version> version) {
        if (version.isEmpty() || version.get().isTombstone()) {
            return null;
        }
        Struct row = version.get().row();
        for (Filter f : filters) {
            Field field = row.schema().field(f.column());
            Object v = field == null ? null : row.get(field);
            if (v == null || !String.valueOf(v).equals(f.literal())) {
                return null;
            }
        }
        return row;
    }
}
