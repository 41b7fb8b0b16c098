package io.asofconnect.it.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The plugin's rule for its own problem lines, checked on real worker logs: every WARN or ERROR line logged by
 * an {@code io.asofconnect} class begins by naming whom it concerns: the task ("connector NAME task N: "), for a
 * connector's own lines the connector ("connector NAME: "), and for a replica, which serves several tasks from
 * its own threads, the tasks that use it ("Replica NAME (used by connector NAME task N, ...): "). A worker's
 * layout need not print Connect's logging context, so the name must be in the text. The harness layout is
 * {@code [%d] %p [%c] %m}, without that context, to see exactly what such a worker shows.
 */
public final class ProblemLogLines {
    private static final Pattern HEADER = Pattern.compile("^\\[[^\\]]*\\] (WARN|ERROR) \\[(io\\.asofconnect\\.[^\\]]+)\\] (.*)$");
    private static final Pattern TASK = Pattern.compile("^connector [^:]+ task \\d+( \\(\\w+\\))?: ");
    private static final Pattern CONNECTOR = Pattern.compile("^connector [^:]+: ");
    private static final Pattern REPLICA = Pattern.compile("^Replica \\S+ \\((used by connector [^:]+ task \\d+|no task uses it now)");

    private ProblemLogLines() {
    }

    /** The WARN and ERROR lines of ours in {@code log} that do not name their connector and task. */
    static List<String> unnamed(Path log) {
        List<String> bad = new ArrayList<>();
        List<String> lines;
        try {
            lines = Files.readAllLines(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + log, e);
        }
        for (String line : lines) {
            Matcher m = HEADER.matcher(line);
            if (!m.matches()) {
                continue;
            }
            String logger = m.group(2);
            String message = m.group(3);
            boolean named = TASK.matcher(message).find() || REPLICA.matcher(message).find()
                    || (logger.endsWith("Connector") && CONNECTOR.matcher(message).find());
            if (!named) {
                bad.add(log.getParent().getFileName() + "/" + log.getFileName() + ": " + line);
            }
        }
        return bad;
    }

    /** {@link #unnamed(Path)} over every worker log under {@code work}. */
    public static List<String> unnamedUnder(Path work) {
        List<String> bad = new ArrayList<>();
        try (Stream<Path> files = Files.walk(work)) {
            files.filter(p -> p.getFileName().toString().equals("worker.log")).sorted().forEach(p -> bad.addAll(unnamed(p)));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the worker logs under " + work, e);
        }
        return bad;
    }
}
