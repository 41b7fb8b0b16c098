package io.asofconnect.writer.config;

import io.asofconnect.common.jdbc.JdbcDriverProperties;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Accepts only {@code jdbc:postgresql:} URLs whose properties cannot load a class of the attacker's choosing
 * or write a file on the worker. A connector config is often editable by people who must not get code
 * execution on the worker; the refused properties are {@link JdbcDriverProperties#FORBIDDEN}, shared with the
 * replica's Debezium pass-through.
 *
 * <p>Error messages name the offending property, never the URL itself (it may carry secrets).
 */
public final class JdbcUrlValidator implements ConfigDef.Validator {
    static final String PREFIX = "jdbc:postgresql:";

    /** The password belongs in connection.password (Type.PASSWORD), never in a URL that is logged and shown. */
    static final String PASSWORD_PROPERTY = "password";

    @Override
    public void ensureValid(String name, Object value) {
        if (value == null || value.toString().isBlank()) {
            throw new ConfigException(name, null, "is required: a jdbc:postgresql://host:port/database URL");
        }
        String url = value.toString().trim();
        if (!url.startsWith(PREFIX)) {
            throw new ConfigException(name + " must start with " + PREFIX + " (Postgres is the only supported target)");
        }
        for (String key : properties(url).keySet()) {
            String lower = key.toLowerCase(Locale.ROOT);
            if (JdbcDriverProperties.isForbidden(lower)) {
                throw new ConfigException(name + " carries the driver property '" + key
                        + "', which loads classes or writes files on the worker; remove it from the URL");
            }
            if (lower.equals(PASSWORD_PROPERTY)) {
                throw new ConfigException(name + " carries a password; remove it from the URL and set "
                        + WriterOptions.CONNECTION_PASSWORD + " instead, which is never shown or logged");
            }
        }
    }

    /**
     * One WARN line when the URL allows unencrypted or unauthenticated connections.
     *
     * @param who the connector or task the line is about ({@link io.asofconnect.common.logging.LogContext})
     */
    public static void warnIfWeakTls(String url, org.slf4j.Logger log, String who) {
        weakSslMode(url).ifPresent(mode -> log.warn("{}: {} uses sslmode={}, which allows unencrypted or unauthenticated"
                + " connections; use sslmode=verify-full", who, WriterOptions.CONNECTION_URL, mode));
    }

    /**
     * The sslmode when it lets traffic go unencrypted or unauthenticated ({@code disable}, {@code allow},
     * {@code prefer}); a URL without sslmode or ssl=true gets the driver's default, {@code prefer}.
     */
    public static Optional<String> weakSslMode(String url) {
        boolean sslTrue = false;
        for (Map.Entry<String, String> e : properties(url).entrySet()) {
            if (e.getKey().equalsIgnoreCase("sslmode")) {
                String mode = e.getValue().toLowerCase(Locale.ROOT);
                return JdbcDriverProperties.isWeakSslMode(mode) ? Optional.of(mode) : Optional.empty();
            }
            sslTrue |= e.getKey().equalsIgnoreCase("ssl") && e.getValue().equalsIgnoreCase("true");
        }
        return sslTrue ? Optional.empty() : Optional.of("prefer");
    }

    /** The URL's query properties, percent-decoded, as pgjdbc would read them. */
    static Map<String, String> properties(String url) {
        Map<String, String> props = new LinkedHashMap<>();
        int q = url.indexOf('?');
        if (q < 0) {
            return props;
        }
        for (String pair : url.substring(q + 1).split("&")) {
            if (pair.isEmpty()) {
                continue;
            }
            int eq = pair.indexOf('=');
            String k = eq < 0 ? pair : pair.substring(0, eq);
            String v = eq < 0 ? "" : pair.substring(eq + 1);
            props.put(decode(k).trim(), decode(v));
        }
        return props;
    }

    private static String decode(String s) {
        try {
            return URLDecoder.decode(s, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return s;
        }
    }

    @Override
    public String toString() {
        return "a jdbc:postgresql:// URL without class-loading or file-writing properties ("
                + JdbcDriverProperties.describeForbidden() + ") and without a password";
    }
}
