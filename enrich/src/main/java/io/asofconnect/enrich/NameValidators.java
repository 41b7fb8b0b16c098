package io.asofconnect.enrich;

import io.asofconnect.common.config.OptionalText;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Validators for options that hold names (a header, a field, a column list, a field-name prefix), so that
 * REST {@code config/validate} reports a bad value on its own key. Each {@code toString()} says what is valid.
 */
final class NameValidators {
    private NameValidators() {
    }

    /** Unset, or a non-blank name without control characters. */
    static ConfigDef.Validator optionalName(String example) {
        OptionalText text = OptionalText.nonBlank("a name such as " + example);
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                text.ensureValid(name, value);
                if (value != null) {
                    requireNoControlCharacters(name, value.toString());
                }
            }

            @Override
            public String toString() {
                return text.toString();
            }
        };
    }

    /** Unset, empty, or text without control characters. */
    static ConfigDef.Validator optionalPrefix(String example) {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value != null) {
                    requireNoControlCharacters(name, value.toString());
                }
            }

            @Override
            public String toString() {
                return "unset, empty, or a prefix such as " + example;
            }
        };
    }

    /** A list (possibly empty) of distinct, non-blank names. */
    static ConfigDef.Validator distinctNames(String example) {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (!(value instanceof List<?> list)) {
                    return;
                }
                Set<String> seen = new HashSet<>();
                for (Object o : list) {
                    String s = o == null ? "" : o.toString().trim();
                    if (s.isEmpty()) {
                        throw new ConfigException(name, value, "must list non-empty column names, e.g. " + example
                                + " (an empty entry, as in a,,b or a trailing comma, is not allowed)");
                    }
                    requireNoControlCharacters(name, s);
                    if (!seen.add(s)) {
                        throw new ConfigException(name, value, "must list distinct column names; " + s
                                + " is listed twice");
                    }
                }
            }

            @Override
            public String toString() {
                return "a comma-separated list of distinct column names such as " + example + " (or empty)";
            }
        };
    }

    private static void requireNoControlCharacters(String name, String s) {
        if (s.chars().anyMatch(Character::isISOControl)) {
            throw new ConfigException(name, s, "must not contain control characters");
        }
    }
}
