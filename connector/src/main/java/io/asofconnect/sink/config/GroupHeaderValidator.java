package io.asofconnect.sink.config;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/** {@code changelog.group.header}: empty (off), or a header name without control characters (ConfigDef trims it). */
final class GroupHeaderValidator implements ConfigDef.Validator {
    static final int MAX_LENGTH = 249;

    @Override
    public void ensureValid(String name, Object value) {
        String text = value == null ? "" : value.toString();
        if (text.isEmpty()) {
            return;
        }
        if (text.length() > MAX_LENGTH) {
            throw new ConfigException(name + " is " + text.length() + " characters long; a header name here has at most " + MAX_LENGTH);
        }
        if (text.chars().anyMatch(Character::isISOControl)) {
            throw new ConfigException(name + " holds a control character; name the header the producer sets");
        }
    }

    @Override
    public String toString() {
        return "empty, or a header name of 1 to " + MAX_LENGTH + " characters without control characters";
    }
}
