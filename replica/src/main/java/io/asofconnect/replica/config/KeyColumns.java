package io.asofconnect.replica.config;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code replica.key.columns} option: {@code schema.table:col1,col2;schema.other:c}, the same form
 * as Debezium's {@code message.key.columns}, to which it is passed unchanged.
 */
final class KeyColumns {
    static final ConfigDef.Validator VALIDATOR = new ConfigDef.Validator() {
        @Override
        public void ensureValid(String name, Object value) {
            parse(name, value == null ? "" : value.toString());
        }

        @Override
        public String toString() {
            return "schema.table:col1,col2;schema.other:col";
        }
    };

    private KeyColumns() {
    }

    /** Table ({@code schema.table}) to its key columns, in the order given. */
    static Map<String, List<String>> parse(String name, String text) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        if (text == null || text.isBlank()) {
            return Collections.unmodifiableMap(out);
        }
        for (String entry : text.split(";")) {
            if (entry.isBlank()) {
                continue;
            }
            int colon = entry.indexOf(':');
            if (colon <= 0 || colon == entry.length() - 1) {
                throw new ConfigException(name, text, "each entry must be schema.table:col1,col2 (entries separated by ';')");
            }
            String table = entry.substring(0, colon).trim();
            if (!ReplicaConfig.isQualifiedTable(table)) {
                throw new ConfigException(name, text, "table '" + table + "' must be written schema.table");
            }
            List<String> cols = new ArrayList<>();
            for (String c : Arrays.asList(entry.substring(colon + 1).split(","))) {
                if (c.isBlank()) {
                    throw new ConfigException(name, text, "an empty column name for table '" + table + "'");
                }
                cols.add(c.trim());
            }
            if (out.put(table, List.copyOf(cols)) != null) {
                throw new ConfigException(name, text, "table '" + table + "' is listed twice");
            }
        }
        return Collections.unmodifiableMap(out);
    }
}
