package io.asofconnect.sink;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/** Absent, or a string with a non-whitespace character: a blank value is a mistake, not "use the default". */
final class OptionalNonBlankString implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
        if (value != null && value.toString().isBlank()) {
            throw new ConfigException(name + " must not be blank: leave it out, or give a value");
        }
    }

    @Override
    public String toString() {
        return "absent, or a non-blank string";
    }
}
