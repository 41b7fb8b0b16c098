package io.asofconnect.tablejoin;

import io.asofconnect.replica.config.ReplicaConfig;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.TreeMap;

import org.postgresql.Driver;

/**
 * The primary-key columns of the view's tables: from {@code replica.key.columns} when it names the table (as the
 * replica keys it then), else from the source database's catalog, through the replica's connection settings.
 */
final class SourceKeys {
    private SourceKeys() {
    }

    /** The key columns of {@code table} (schema.table), in key order; empty when the table has none. */
    static List<String> of(ReplicaConfig replica, String table) throws SQLException {
        String declared = declared(replica.keyColumnsText(), table);
        if (declared != null) {
            return Arrays.stream(declared.split(",")).map(String::trim).toList();
        }
        Properties p = new Properties();
        if (replica.user() != null) {
            p.setProperty("user", replica.user());
        }
        if (replica.password() != null) {
            p.setProperty("password", replica.password().value());
        }
        p.setProperty("sslmode", replica.sslMode());
        p.setProperty("connectTimeout", Long.toString(Math.max(1, replica.connectTimeoutMs() / 1000)));
        int dot = table.indexOf('.');
        // The worker's DriverManager does not see a plugin's driver: ask ours directly.
        try (Connection c = new Driver().connect(replica.jdbcUrl(), p)) {
            if (c == null) {
                throw new SQLException("the Postgres driver does not accept " + replica.jdbcUrl());
            }
            DatabaseMetaData md = c.getMetaData();
            TreeMap<Short, String> columns = new TreeMap<>();
            try (ResultSet rs = md.getPrimaryKeys(null, table.substring(0, dot), table.substring(dot + 1))) {
                while (rs.next()) {
                    columns.put(rs.getShort("KEY_SEQ"), rs.getString("COLUMN_NAME"));
                }
            }
            return new ArrayList<>(columns.values());
        }
    }

    private static String declared(String keyColumns, String table) {
        if (keyColumns == null) {
            return null;
        }
        for (String entry : keyColumns.split(";")) {
            int colon = entry.indexOf(':');
            if (colon > 0 && entry.substring(0, colon).trim().equalsIgnoreCase(table)) {
                return entry.substring(colon + 1);
            }
        }
        return null;
    }

}
