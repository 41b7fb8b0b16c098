package io.asofconnect.it.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;

/** Writes the .properties and log4j2 files each server process is started with. */
public final class PropertiesFiles {

    private PropertiesFiles() {
    }

    public static Path write(Path file, Map<String, String> values) {
        Properties properties = new Properties();
        properties.putAll(values);
        try {
            Files.createDirectories(file.getParent());
            try (Writer out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
                properties.store(out, null);
            }
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot write " + file, e);
        }
    }

    /** A log4j2 configuration printing INFO to stdout (which the harness sends to the process's log file). */
    public static Path log4j2(Path dir, Map<String, String> debugLoggers) {
        StringBuilder text = new StringBuilder()
                .append("status = warn\n")
                .append("appender.out.type = Console\n")
                .append("appender.out.name = out\n")
                .append("appender.out.layout.type = PatternLayout\n")
                .append("appender.out.layout.pattern = [%d] %p [%c] %m%n\n")
                .append("rootLogger.level = INFO\n")
                .append("rootLogger.appenderRef.out.ref = out\n")
                .append("logger.kafka.name = kafka\nlogger.kafka.level = WARN\n")
                .append("logger.kafkaraft.name = org.apache.kafka.raft\nlogger.kafkaraft.level = WARN\n")
                .append("logger.kafkaclients.name = org.apache.kafka.clients\nlogger.kafkaclients.level = WARN\n")
                .append("logger.kafkacontroller.name = org.apache.kafka.controller\nlogger.kafkacontroller.level = WARN\n")
                .append("logger.reflections.name = org.reflections\nlogger.reflections.level = ERROR\n");
        int i = 0;
        for (Map.Entry<String, String> logger : debugLoggers.entrySet()) {
            text.append("logger.extra").append(i).append(".name = ").append(logger.getKey()).append('\n');
            text.append("logger.extra").append(i).append(".level = ").append(logger.getValue()).append('\n');
            i++;
        }
        Path file = dir.resolve("log4j2.properties");
        try {
            Files.createDirectories(dir);
            Files.writeString(file, text.toString(), StandardCharsets.UTF_8);
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot write " + file, e);
        }
    }
}
