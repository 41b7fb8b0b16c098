package io.asofconnect.common.jdbc;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The pgjdbc driver properties a connector config must never set, and the driver's TLS modes. One list for
 * every place a config reaches the driver (the sink's URL, the replica's Debezium pass-through), because a
 * connector config is often editable by people who must not get code execution on the worker: pgjdbc
 * instantiates the classes named in {@code socketFactory}, {@code sslfactory}, {@code sslhostnameverifier},
 * {@code sslpasswordcallback}, {@code authenticationPluginClassName} and {@code xmlFactoryFactory} (whose
 * {@code LEGACY_INSECURE} value also turns on XML external entities), and writes where {@code loggerFile}
 * points ({@code loggerLevel} turns that logging on).
 */
public final class JdbcDriverProperties {
    /** Lower-cased names of the properties that load classes or write files, with the arguments passed to those classes. */
    public static final Set<String> FORBIDDEN = Set.of(
            "socketfactory", "socketfactoryarg",
            "sslfactory", "sslfactoryarg",
            "sslhostnameverifier", "sslpasswordcallback",
            "authenticationpluginclassname",
            "loggerfile", "loggerlevel",
            "xmlfactoryfactory");

    /** pgjdbc's {@code sslmode} values, weakest first. */
    public static final List<String> SSL_MODES = List.of("disable", "allow", "prefer", "require", "verify-ca", "verify-full");

    /** Modes that let traffic go unencrypted or the server go unauthenticated. */
    public static final Set<String> WEAK_SSL_MODES = Set.of("disable", "allow", "prefer");

    private JdbcDriverProperties() {
    }

    /** Whether {@code property} (any case) loads a class or writes a file. */
    public static boolean isForbidden(String property) {
        return property != null && FORBIDDEN.contains(property.trim().toLowerCase(Locale.ROOT));
    }

    /** Whether {@code sslMode} (any case) allows unencrypted or unauthenticated connections. */
    public static boolean isWeakSslMode(String sslMode) {
        return sslMode != null && WEAK_SSL_MODES.contains(sslMode.trim().toLowerCase(Locale.ROOT));
    }

    /** Validates an {@code sslmode} option: one of {@link #SSL_MODES}, in any case. */
    public static ConfigDef.Validator sslModeValidator() {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value == null || !SSL_MODES.contains(value.toString().trim().toLowerCase(Locale.ROOT))) {
                    throw new ConfigException(name, value, "must be one of " + this);
                }
            }

            @Override
            public String toString() {
                return String.join(", ", SSL_MODES);
            }
        };
    }

    /** The forbidden names, sorted, for validator descriptions and messages. */
    public static String describeForbidden() {
        return String.join(", ", new java.util.TreeSet<>(FORBIDDEN));
    }
}
