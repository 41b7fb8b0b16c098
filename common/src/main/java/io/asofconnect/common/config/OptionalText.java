package io.asofconnect.common.config;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * The one validator for a text option that may be left out but, when given, must say something: a blank
 * value is a mistake (often an unset variable in a template), not a request for the default. Shared by the
 * transform, the sink and the replica so all three say it the same way.
 */
public final class OptionalText implements ConfigDef.Validator {
    private final String description;

    private OptionalText(String description) {
        this.description = description;
    }

    /** Absent, or {@code description} (e.g. "a Postgres role name") with at least one non-blank character. */
    public static OptionalText nonBlank(String description) {
        return new OptionalText(description);
    }

    @Override
    public void ensureValid(String name, Object value) {
        if (value != null && value.toString().isBlank()) {
            throw new ConfigException(name, value, "must not be blank: give " + description + ", or leave the option out"
                    + " rather than giving it empty");
        }
    }

    @Override
    public String toString() {
        return "absent, or " + description + " (not blank)";
    }
}
