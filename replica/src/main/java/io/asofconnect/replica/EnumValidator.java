package io.asofconnect.replica;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Validates and parses a string option whose values are the constants of one Java enum, case-insensitively.
 * Its {@link #toString()} lists the valid values, which Connect shows in {@code config/validate}.
 */
final class EnumValidator<E extends Enum<E>> implements ConfigDef.Validator {
    private final Class<E> type;

    private EnumValidator(Class<E> type) {
        this.type = type;
    }

    static <E extends Enum<E>> EnumValidator<E> of(Class<E> type) {
        return new EnumValidator<>(type);
    }

    @Override
    public void ensureValid(String name, Object value) {
        if (value == null) {
            throw new ConfigException(name, null, "must be one of " + this);
        }
        parse(name, value.toString());
    }

    E parse(String name, String value) {
        for (E e : type.getEnumConstants()) {
            if (e.name().equalsIgnoreCase(value.trim())) {
                return e;
            }
        }
        throw new ConfigException(name, value, "must be one of " + this);
    }

    List<String> names() {
        return Arrays.stream(type.getEnumConstants()).map(Enum::name).toList();
    }

    @Override
    public String toString() {
        return String.join(", ", names()).toUpperCase(Locale.ROOT);
    }
}
