package io.asofconnect.replica.store;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A {@link StoreCrashWriter} in its own JVM, with its stdout lines queued for the test to read with a bound. */
final class ChildJvm implements AutoCloseable {
    private final Process process;
    private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final Thread pump;
    private final Path stderr;

    ChildJvm(Path store) throws IOException {
        stderr = store.resolveSibling(store.getFileName() + ".writer-stderr.log");
        String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        process = new ProcessBuilder(List.of(java, "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), StoreCrashWriter.class.getName(), store.toString()))
                .redirectError(ProcessBuilder.Redirect.to(stderr.toFile()))
                .start();
        pump = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    lines.add(line);
                }
            } catch (IOException ignored) {
                // The child was killed mid-line: what was read is what counts.
            }
        }, "crash-writer-stdout");
        pump.setDaemon(true);
        pump.start();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** What the writer printed to stderr so far (its last lines), for a failure message. */
    String stderrTail() {
        try {
            List<String> all = java.nio.file.Files.readAllLines(stderr, StandardCharsets.UTF_8);
            return String.join("\n", all.subList(Math.max(0, all.size() - 30), all.size()));
        } catch (IOException e) {
            return "(no stderr: " + e.getMessage() + ")";
        }
    }

    /** The next line, or null after {@code timeoutMillis}. */
    String nextLine(long timeoutMillis) throws InterruptedException {
        return lines.poll(timeoutMillis, TimeUnit.MILLISECONDS);
    }

    /** SIGKILLs the child, reaps it, and returns the last complete line it printed (or null). */
    String kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("crash writer did not die within 30 s of SIGKILL");
        }
        pump.join(10_000);
        String last = null;
        String l;
        while ((l = lines.poll()) != null) {
            last = l;
        }
        return last;
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
