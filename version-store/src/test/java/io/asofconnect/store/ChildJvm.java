package io.asofconnect.store;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@link StoreCrashWriter} in its own JVM. Its stdout goes to a file, not a pipe: what the writer printed
 * before a SIGKILL is then in the file for certain, whereas a pipe read by a thread of this JVM can lose
 * its last lines when the JDK closes the stream of a destroyed process under the reader (the crash test
 * once saw a store five commits ahead of the last sequence it had read).
 */
final class ChildJvm implements AutoCloseable {
    private static final long POLL_MS = 5;
    private final Process process;
    private final Path stdout;
    private final Path stderr;
    /** Complete lines handed out by {@link #nextLine} so far. */
    private int consumed;

    /** {@code writerArgs} follow the store path on the writer's command line (see {@link StoreCrashWriter#main}). */
    ChildJvm(Path store, String... writerArgs) throws IOException {
        stdout = store.resolveSibling(store.getFileName() + ".writer-stdout.log");
        stderr = store.resolveSibling(store.getFileName() + ".writer-stderr.log");
        String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> command = new ArrayList<>(List.of(java, "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), StoreCrashWriter.class.getName(), store.toString()));
        command.addAll(List.of(writerArgs));
        process = new ProcessBuilder(command)
                .redirectOutput(ProcessBuilder.Redirect.to(stdout.toFile()))
                .redirectError(ProcessBuilder.Redirect.to(stderr.toFile()))
                .start();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** What the writer printed to stderr so far (its last lines), for a failure message. */
    String stderrTail() {
        try {
            List<String> all = Files.readAllLines(stderr, StandardCharsets.UTF_8);
            return String.join("\n", all.subList(Math.max(0, all.size() - 30), all.size()));
        } catch (IOException e) {
            return "(no stderr: " + e.getMessage() + ")";
        }
    }

    /** The next complete line the writer printed, or null after {@code timeoutMillis}. */
    String nextLine(long timeoutMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (true) {
            List<String> lines = completeLines();
            if (lines.size() > consumed) {
                return lines.get(consumed++);
            }
            if (System.nanoTime() >= deadline) {
                return null;
            }
            Thread.sleep(POLL_MS);
        }
    }

    /** SIGKILLs the child, reaps it, and returns the last complete line it printed (or null). */
    String kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("crash writer did not die within 30 s of SIGKILL");
        }
        List<String> lines = completeLines();
        consumed = lines.size();
        return lines.isEmpty() ? null : lines.get(lines.size() - 1);
    }

    /** The lines ended by a newline; a line cut by the kill is not one. */
    private List<String> completeLines() {
        String text;
        try {
            text = Files.readString(stdout, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the crash writer's output " + stdout.getFileName(), e);
        }
        List<String> lines = new ArrayList<>();
        int start = 0;
        for (int nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
            lines.add(text.substring(start, nl));
            start = nl + 1;
        }
        return lines;
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            try {
                kill();
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
