package io.asofconnect.common.config;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The one way an enum-valued option of this plugin is validated, documented and parsed: the transform,
 * the sink and the replica all use it, so every such option accepts the same spellings (any case,
 * surrounding blanks ignored) and {@code config/validate} lists the valid values from the enum itself.
 */
public final class EnumOption<E extends Enum<E>> implements ConfigDef.Validator {
    private final Class<E> type;

    private EnumOption(Class<E> type) {
        this.type = type;
    }

    public static <E extends Enum<E>> EnumOption<E> of(Class<E> type) {
        return new EnumOption<>(type);
    }

    /** The constant named by {@code text}; a {@link ConfigException} naming {@code key} and the valid values otherwise. */
    public E parse(String key, String text) {
        if (text == null) {
            throw new ConfigException(key, null, "must be one of " + this);
        }
        String wanted = text.trim().toUpperCase(Locale.ROOT);
        for (E e : type.getEnumConstants()) {
            if (e.name().equals(wanted)) {
                return e;
            }
        }
        throw new ConfigException(key, text, "must be one of " + this);
    }

    @Override
    public void ensureValid(String name, Object value) {
        parse(name, value == null ? null : value.toString());
    }

    public List<String> names() {
        return Arrays.stream(type.getEnumConstants()).map(Enum::name).toList();
    }

    /** The form {@code config/validate} and the generated option reference show: {@code A, B, C}. */
    @Override
    public String toString() {
        return String.join(", ", names());
    }
}
