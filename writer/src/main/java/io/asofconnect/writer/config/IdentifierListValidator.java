package io.asofconnect.writer.config;

import io.asofconnect.writer.PostgresDialect;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** A list, possibly empty, of distinct column names, each a Postgres identifier ({@link IdentifierValidator}). */
public final class IdentifierListValidator implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
        if (value == null) {
            return;
        }
        if (!(value instanceof List<?> list)) {
            throw new ConfigException(name + " must be a comma-separated list of column names");
        }
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < list.size(); i++) {
            String item = String.valueOf(list.get(i)).trim();
            String problem = item.isEmpty() ? "is empty (two commas in a row, or one at an end?)" : PostgresDialect.identifierProblem(item);
            if (problem != null) {
                throw new ConfigException(name + ": entry " + (i + 1) + " " + problem);
            }
            if (!seen.add(item)) {
                throw new ConfigException(name + ": the column " + item + " is listed twice");
            }
        }
    }

    @Override
    public String toString() {
        return "a comma-separated list of distinct column names, each 1 to 63 bytes (UTF-8) without NUL characters";
    }
}
