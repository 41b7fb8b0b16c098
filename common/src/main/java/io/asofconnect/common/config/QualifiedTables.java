package io.asofconnect.common.config;

import java.util.List;
import java.util.regex.Pattern;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * Tables named {@code schema.table}, as Debezium's include lists name them: one validator for every option that
 * takes such a name or a list of them, so that they all accept and refuse the same text.
 */
public final class QualifiedTables {
    private static final Pattern FORM = Pattern.compile("[^.\\s]+\\.[^.\\s]+");

    private QualifiedTables() {
    }

    public static boolean isQualified(String table) {
        return table != null && FORM.matcher(table.trim()).matches();
    }

    /** For a STRING option: one table, e.g. {@code example}. */
    public static ConfigDef.Validator one(String example) {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (!isQualified(value == null ? null : value.toString())) {
                    throw new ConfigException(name, value, "write the table as schema.table, e.g. " + example);
                }
            }

            @Override
            public String toString() {
                return "schema.table";
            }
        };
    }

    /** For a LIST option: each entry a table, e.g. {@code example}; {@code also} (or empty) adds a condition to the text. */
    public static ConfigDef.Validator list(String example, String also) {
        String condition = also.isEmpty() ? "" : ", and be " + also;
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value instanceof List<?> list) {
                    for (Object t : list) {
                        if (!isQualified(String.valueOf(t))) {
                            throw new ConfigException(name, value, "each table must be written schema.table, e.g. " + example + condition);
                        }
                    }
                }
            }

            @Override
            public String toString() {
                return "schema.table[,schema.table...]" + (also.isEmpty() ? "" : ", each " + also);
            }
        };
    }
}
