package io.asofconnect.writer.config;

import io.asofconnect.writer.PostgresDialect;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/** A non-empty Postgres identifier that fits in 63 bytes and has no NUL; it is always quoted, so any other character is fine. */
public final class IdentifierValidator implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
        String problem = value == null ? "is required" : PostgresDialect.identifierProblem(value.toString());
        if (problem != null) {
            throw new ConfigException(name + " " + problem);
        }
    }

    @Override
    public String toString() {
        return "a Postgres identifier of 1 to 63 bytes (UTF-8) without NUL characters";
    }
}
