package io.asofconnect.it.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Loads the files of {@code config-examples/} and fills their {@code ${UPPER_CASE}} placeholders (host, ports,
 * paths). Only upper-case names are placeholders, so Connect's own {@code ${file:...}} references pass through;
 * a placeholder without a value fails loudly, which keeps the examples and the tests in step.
 */
public final class ConfigTemplates {

    private static final Pattern PLACEHOLDER = Pattern.compile("\\$\\{([A-Z][A-Z0-9_]*)}");
    private static final ObjectMapper JSON = new ObjectMapper();

    private ConfigTemplates() {
    }

    public static String render(String exampleName, Map<String, String> values) {
        Path file = TestPaths.configExamples().resolve(exampleName);
        try {
            return substitute(Files.readString(file, StandardCharsets.UTF_8), values, exampleName);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read config example " + file, e);
        }
    }

    /** Renders an example into {@code dir} under the same file name; returns the written file. */
    public static Path renderTo(String exampleName, Map<String, String> values, Path dir) {
        Path target = dir.resolve(Path.of(exampleName).getFileName().toString());
        try {
            Files.createDirectories(dir);
            Files.writeString(target, render(exampleName, values), StandardCharsets.UTF_8);
            return target;
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot write " + target, e);
        }
    }

    /** A connector JSON example, {"name": ..., "config": {...}}, rendered and parsed. */
    public static JsonNode json(String exampleName, Map<String, String> values) {
        try {
            return JSON.readTree(render(exampleName, values));
        } catch (IOException e) {
            throw new IllegalStateException("Config example " + exampleName + " is not valid JSON", e);
        }
    }

    /** The {@code config} object of a connector JSON example, as the body of PUT /connectors/NAME/config. */
    public static Map<String, String> connectorConfig(String exampleName, Map<String, String> values) {
        JsonNode root = json(exampleName, values);
        JsonNode config = root.has("config") ? root.get("config") : root;
        return new LinkedHashMap<>(JSON.convertValue(config, new TypeReference<Map<String, String>>() { }));
    }

    static String substitute(String text, Map<String, String> values, String source) {
        Matcher m = PLACEHOLDER.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String value = values.get(m.group(1));
            if (value == null) {
                throw new IllegalArgumentException("Config example " + source + " uses ${" + m.group(1)
                        + "} but the test gave no value for it");
            }
            m.appendReplacement(out, Matcher.quoteReplacement(value));
        }
        m.appendTail(out);
        return out.toString();
    }
}
