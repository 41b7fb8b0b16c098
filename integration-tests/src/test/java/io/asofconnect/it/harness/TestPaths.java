package io.asofconnect.it.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * Paths handed over by the build as system properties (see the failsafe and exec configuration in the
 * module pom), so tests and the quickstart use the very plugin archive and worker classpath Maven built.
 */
public final class TestPaths {

    public static final String PLUGIN_ZIP = "asof.plugin.zip";
    public static final String WORKER_CLASSPATH = "asof.worker.classpath";
    public static final String CONFIG_EXAMPLES = "asof.config.examples";
    public static final String WORK_DIR = "asof.it.work";

    private TestPaths() {
    }

    public static Path pluginZip() {
        return existing(PLUGIN_ZIP, "build the connector module first: mvn -B -DskipTests package");
    }

    public static Path configExamples() {
        return existing(CONFIG_EXAMPLES, "it is the config-examples folder at the project root");
    }

    /** The runtime-scope classpath of this module: Kafka, Connect and logging jars only. */
    public static String workerClasspath() {
        Path file = existing(WORKER_CLASSPATH, "it is written by maven-dependency-plugin:build-classpath");
        try {
            String classpath = Files.readString(file).trim();
            if (classpath.isEmpty()) {
                throw new IllegalStateException("Worker classpath file " + file + " is empty; rebuild the module");
            }
            return classpath;
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read the worker classpath file " + file, e);
        }
    }

    /** A fresh directory for one test class (or the quickstart) under the build directory. */
    public static Path workDir(String name) {
        String base = System.getProperty(WORK_DIR, Paths.get("target", "it-work").toString());
        Path dir = Paths.get(base).toAbsolutePath().resolve(name + "-" + System.currentTimeMillis());
        try {
            return Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot create the work directory " + dir, e);
        }
    }

    private static Path existing(String property, String hint) {
        String value = System.getProperty(property);
        if (value == null || value.isBlank()) {
            throw new IllegalStateException("System property " + property + " is not set; run through Maven ("
                    + "mvn -B verify) or pass -D" + property + "=...");
        }
        Path path = Paths.get(value).toAbsolutePath().normalize();
        if (!Files.exists(path)) {
            throw new IllegalStateException("System property " + property + " points to " + path
                    + ", which does not exist; " + hint);
        }
        return path;
    }
}
