package io.asofconnect.sink.config;

import io.asofconnect.writer.PostgresDialect;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * {@code changelog.op.field}: empty (off), or the name of a value field. The field is never written, but a name
 * that could not be a column could not be a field of a record the sink writes either.
 */
final class ChangelogOpFieldValidator implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
        String text = value == null ? "" : value.toString();
        if (text.isEmpty()) {
            return;
        }
        String problem = PostgresDialect.identifierProblem(text);
        if (problem != null) {
            throw new ConfigException(name + " " + problem);
        }
    }

    @Override
    public String toString() {
        return "empty, or a value field name of 1 to 63 bytes (UTF-8) without NUL characters";
    }
}
