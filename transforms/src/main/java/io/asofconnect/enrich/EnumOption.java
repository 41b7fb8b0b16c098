package io.asofconnect.enrich;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The one way an enum-valued option is validated, documented and parsed, so that no option carries its
 * own copy of the parsing and the list of valid values shown by {@code config/validate} is the enum itself.
 */
final class EnumOption<E extends Enum<E>> implements ConfigDef.Validator {
    private final Class<E> type;

    private EnumOption(Class<E> type) {
        this.type = type;
    }

    static <E extends Enum<E>> EnumOption<E> of(Class<E> type) {
        return new EnumOption<>(type);
    }

    /** Case-insensitive, surrounding blanks ignored. */
    E parse(String key, String text) {
        if (text == null) {
            throw new ConfigException(key, null, "must be one of " + this);
        }
        try {
            return Enum.valueOf(type, text.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new ConfigException(key, text, "must be one of " + this);
        }
    }

    @Override
    public void ensureValid(String name, Object value) {
        parse(name, value == null ? null : value.toString());
    }

    /** The form {@code config/validate} and the generated docs show. */
    @Override
    public String toString() {
        return Arrays.stream(type.getEnumConstants()).map(Enum::name).collect(Collectors.joining(", ", "[", "]"));
    }
}
