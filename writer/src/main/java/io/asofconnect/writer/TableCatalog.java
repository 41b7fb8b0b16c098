package io.asofconnect.writer;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Creates missing tables and columns under {@code schema.evolution=BASIC}. Knows the columns of tables it
 * has seen (a bounded cache); the DDL runs in the caller's transaction, so the cache is forgotten whenever
 * that transaction rolls back.
 */
final class TableCatalog {
    private static final int MAX_TABLES = 1024;

    private final PostgresDialect dialect;
    private final Map<String, Set<String>> columns = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Set<String>> eldest) {
            return size() > MAX_TABLES;
        }
    };

    TableCatalog(PostgresDialect dialect) {
        this.dialect = dialect;
    }

    /**
     * Makes the table and the change's columns exist. False only for a delete on a table that does not exist:
     * there is nothing to delete, and creating the table from a key alone would guess its columns.
     */
    boolean ensure(Connection c, RowChange change) throws SQLException {
        Set<String> known = columns.get(change.table());
        if (known != null && containsAll(known, change)) {
            return true;
        }
        lock(c, change.table());
        known = read(c, change.table());
        if (known.isEmpty()) {
            if (change.op() == RowChange.Op.DELETE) {
                return false;
            }
            try (PreparedStatement ps = c.prepareStatement(dialect.createTable(change.table(), change.keyColumns(), change.valueColumns()))) {
                ps.execute();
            }
            known = read(c, change.table());
        } else {
            for (Column col : change.valueColumns()) {
                if (!known.contains(col.name())) {
                    try (PreparedStatement ps = c.prepareStatement(dialect.addColumn(change.table(), col))) {
                        ps.execute();
                    }
                    known.add(col.name());
                }
            }
        }
        columns.put(change.table(), known);
        return true;
    }

    /** After a rollback the DDL of the transaction is gone too. */
    void forget() {
        columns.clear();
    }

    private static boolean containsAll(Set<String> known, RowChange change) {
        for (Column col : change.keyColumns()) {
            if (!known.contains(col.name())) {
                return false;
            }
        }
        for (Column col : change.valueColumns()) {
            if (!known.contains(col.name())) {
                return false;
            }
        }
        return true;
    }

    private void lock(Connection c, String table) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(PostgresDialect.ddlLock())) {
            ps.setString(1, dialect.table(table));
            ps.execute();
        }
    }

    private Set<String> read(Connection c, String table) throws SQLException {
        Set<String> names = new HashSet<>();
        try (PreparedStatement ps = c.prepareStatement(dialect.columnNamesQuery())) {
            ps.setString(1, dialect.schema());
            ps.setString(2, table);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    names.add(rs.getString(1));
                }
            }
        }
        return names;
    }
}
