package io.asofconnect.it.bench;

import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.FreePorts;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.ManagedProcess;
import io.asofconnect.it.harness.Waits;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The JVM running the Kafka Streams peer ({@code io.asofconnect.bench.KStreamsWindowJoinPeer} from the
 * benchmark jar), started as the Connect worker is (Kafka's G1 options under {@code asof.it.production.jvms},
 * {@code connect-distributed.sh}'s heap), and driven over HTTP: one JVM serves the warm-up and every measured
 * round, as one worker does for ours. The jar comes from {@code asof.bench.jar} (default
 * {@code benchmarks/target-bench/benchmarks.jar}, from the project root or a module directory).
 */
final class KStreamsPeerProcess implements AutoCloseable {
    static final String BENCH_JAR = "asof.bench.jar";
    private static final String JAR_DEFAULT = "benchmarks/target-bench/benchmarks.jar";
    static final String MAIN = "io.asofconnect.bench.KStreamsWindowJoinPeer";

    private final ManagedProcess process;
    private final int port;
    private final Path stateDir;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private KStreamsPeerProcess(ManagedProcess process, int port, Path stateDir) {
        this.process = process;
        this.port = port;
        this.stateDir = stateDir;
    }

    static KStreamsPeerProcess start(KafkaBroker broker, Path dir) {
        int port = FreePorts.pick();
        Path state = dir.resolve("state");
        boolean production = ManagedProcess.productionJvms();
        // Kafka Streams logs through the jar's slf4j-simple: at INFO, as the worker logs, with the time of each line.
        List<String> jvm = List.of(production ? "-Xms256m" : "-Xms64m", production ? "-Xmx2g" : "-Xmx640m",
                "-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS");
        ManagedProcess process = ManagedProcess.startJava("kstreams-peer", benchJar().toString(), jvm, MAIN,
                List.of(broker.bootstrapServers(), Integer.toString(port), state.toString()), dir.resolve("kstreams.log"));
        KStreamsPeerProcess peer = new KStreamsPeerProcess(process, port, state);
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            if (!process.isAlive()) {
                throw new IllegalStateException("the Kafka Streams peer exited during start-up; see " + process.logFile());
            }
            try {
                if ("pong".equals(peer.call("/ping", Map.of()))) {
                    return peer;
                }
            } catch (RuntimeException e) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the Kafka Streams peer did not answer within 60 s; see " + process.logFile(), e);
                }
            }
            Waits.pause(Duration.ofMillis(200));
        }
    }

    ManagedProcess process() {
        return process;
    }

    /** SIGKILL: no close, no commit, the open transaction left to be aborted by the next instance. */
    void kill() {
        process.kill();
    }

    /** The state directory of application {@code app} (Kafka Streams puts it under {@code state.dir/<application.id>}). */
    Path stateDir(String app) {
        return stateDir.resolve(app);
    }

    /** Builds an application (topology and clients), not started. */
    void prepare(String app, String left, String right, String out, int threads, long afterMs, long graceMs) {
        Map<String, String> q = new java.util.LinkedHashMap<>(Map.of("app", app, "left", left, "right", right, "out", out,
                "threads", Integer.toString(threads), "after", Long.toString(afterMs), "grace", Long.toString(graceMs)));
        // The group timeouts of the worker's sink consumers (ConnectWorker), so that both rejoin alike after a SIGKILL.
        q.put("session.timeout.ms", Integer.toString(ConnectWorker.SESSION_TIMEOUT_MS));
        q.put("heartbeat.interval.ms", "1500");
        call("/prepare", q);
    }

    void start(String app) {
        call("/start", Map.of("app", app));
    }

    String state(String app) {
        return call("/state", Map.of("app", app));
    }

    /** Bytes of the application's state directory (its RocksDB window stores). */
    long stateBytes(String app) {
        return Long.parseLong(call("/size", Map.of("app", app)).trim());
    }

    /** Closes the application and deletes its local state; returns the bytes of that state after the close (stores flushed). */
    long close(String app) {
        return Long.parseLong(call("/close", Map.of("app", app)).trim());
    }

    String call(String path, Map<String, String> query) {
        String q = query.entrySet().stream()
                .map(e -> e.getKey() + "=" + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8))
                .collect(Collectors.joining("&"));
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path + (q.isEmpty() ? "" : "?" + q)))
                .timeout(Duration.ofSeconds(120)).GET().build();
        try {
            HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new IllegalStateException("Kafka Streams peer " + path + " " + query + ": " + response.statusCode() + " "
                        + response.body() + "; see " + process.logFile());
            }
            return response.body();
        } catch (IOException e) {
            throw new IllegalStateException("Kafka Streams peer " + path + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            try {
                call("/exit", Map.of());
            } catch (RuntimeException ignored) {
                // stopped below anyway
            }
        }
        process.stop();
    }

    /** The benchmark jar, from {@code -Dasof.bench.jar} or the default path from the project root or a module directory. */
    static Path benchJar() {
        String configured = System.getProperty(BENCH_JAR);
        List<Path> candidates = configured != null ? List.of(Path.of(configured))
                : List.of(Path.of(JAR_DEFAULT), Path.of("..").resolve(JAR_DEFAULT));
        for (Path p : candidates) {
            if (Files.isRegularFile(p)) {
                return p.toAbsolutePath().normalize();
            }
        }
        throw new IllegalStateException("the benchmark jar was not found at " + candidates + "; build it with mvn -B"
                + " -Dasof.build.dir=target-bench -pl benchmarks -am package -DskipTests, or set -D" + BENCH_JAR);
    }
}
