package io.asofconnect.it.harness;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A Java main class run in its own JVM, so that SIGKILL and SIGSTOP hit a real, separate process.
 * Output goes to a log file; every started process is remembered until it is reaped so that a failing
 * test can print the tails of all logs ({@link #printTails}) and a shutdown hook can kill leftovers.
 */
public final class ManagedProcess implements AutoCloseable {

    private static final Set<ManagedProcess> LIVE = ConcurrentHashMap.newKeySet();
    private static final Duration GRACEFUL_STOP = Duration.ofSeconds(30);
    private static final Duration REAP = Duration.ofSeconds(15);
    /**
     * Set to {@code true} by a benchmark: the JVMs it starts then run as Kafka's own scripts start a broker and
     * a worker ({@code kafka-run-class.sh}'s G1 options, both JIT tiers), not as the tests' small JVMs. C1 alone
     * made the worker's CPU the bound of every sink measured, the sink hosting the enrichment most of all.
     */
    public static final String PRODUCTION_JVMS = "asof.it.production.jvms";

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(ManagedProcess::killAllLeftovers, "kill-managed-processes"));
    }

    private final String name;
    private final Path logFile;
    private final Process process;

    private ManagedProcess(String name, Path logFile, Process process) {
        this.name = name;
        this.logFile = logFile;
        this.process = process;
    }

    /** True when started JVMs run as in production ({@link #PRODUCTION_JVMS}). */
    public static boolean productionJvms() {
        return Boolean.getBoolean(PRODUCTION_JVMS);
    }

    /**
     * Starts {@code mainClass} with the given classpath; JVM options are kept small because the machine is
     * shared (heap, serial GC, C1 only: these JVMs start often and run small loads), unless
     * {@link #productionJvms()}.
     */
    public static ManagedProcess startJava(String name, String classpath, List<String> jvmOptions,
                                           String mainClass, List<String> args, Path logFile) {
        return startJava(name, classpath, jvmOptions, mainClass, args, logFile, Map.of());
    }

    /** As above, with extra environment variables for the child (e.g. what a config provider reads per worker). */
    public static ManagedProcess startJava(String name, String classpath, List<String> jvmOptions,
                                           String mainClass, List<String> args, Path logFile,
                                           Map<String, String> environment) {
        List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        if (productionJvms()) {
            command.addAll(List.of("-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
                    "-XX:+ExplicitGCInvokesConcurrent"));
        } else {
            command.add("-XX:+UseSerialGC");
            command.add("-XX:TieredStopAtLevel=1");
        }
        command.add("-Djava.awt.headless=true");
        command.addAll(jvmOptions);
        command.add("-cp");
        command.add(classpath);
        command.add(mainClass);
        command.addAll(args);
        return start(name, command, logFile, environment);
    }

    public static ManagedProcess start(String name, List<String> command, Path logFile) {
        return start(name, command, logFile, Map.of());
    }

    public static ManagedProcess start(String name, List<String> command, Path logFile,
                                       Map<String, String> environment) {
        try {
            Files.createDirectories(logFile.getParent());
            // Each process runs in its log's directory: files it puts under user.dir (the replica's store by
            // default) stay private to it, as on separate machines.
            ProcessBuilder builder = new ProcessBuilder(command)
                    .directory(logFile.getParent().toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
            builder.environment().remove("CLASSPATH");
            builder.environment().putAll(environment);
            ManagedProcess started = new ManagedProcess(name, logFile, builder.start());
            LIVE.add(started);
            return started;
        } catch (IOException e) {
            throw new UncheckedIOException("Could not start process " + name, e);
        }
    }

    public String name() {
        return name;
    }

    public long pid() {
        return process.pid();
    }

    public Path logFile() {
        return logFile;
    }

    public int exitValue() {
        return process.exitValue();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    /** SIGKILL: no shutdown hook, no flush, no goodbye to the group. */
    public void kill() {
        process.destroyForcibly();
        reap(REAP);
    }

    /** SIGTERM, then SIGKILL if it is still there after a bounded grace period. */
    public void stop() {
        if (!process.isAlive()) {
            reap(REAP);
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(GRACEFUL_STOP.toMillis(), TimeUnit.MILLISECONDS)) {
                kill();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            kill();
        }
    }

    /** SIGSTOP: the JVM freezes, its sockets stay open, it misses every heartbeat. */
    public void pause() {
        signal("-STOP");
    }

    /** SIGCONT: the frozen JVM carries on as if nothing happened — a zombie. */
    public void resume() {
        signal("-CONT");
    }

    /** Last lines of the log, for failure reports. */
    public List<String> tail(int lines) {
        try {
            if (!Files.exists(logFile)) {
                return List.of();
            }
            List<String> all = Files.readAllLines(logFile, StandardCharsets.UTF_8);
            return all.subList(Math.max(0, all.size() - lines), all.size());
        } catch (IOException | UncheckedIOException e) {
            return List.of("(cannot read " + logFile + ": " + e.getMessage() + ")");
        }
    }

    @Override
    public void close() {
        stop();
    }

    /** How many processes started by this JVM are still running. */
    public static long aliveCount() {
        return LIVE.stream().filter(p -> p.process.isAlive()).count();
    }

    /** Prints the tail of the log of every process started by this JVM that is still remembered. */
    public static void printTails(PrintStream out, int lines) {
        for (ManagedProcess p : LIVE) {
            out.println("----- last " + lines + " lines of " + p.name + " (" + p.logFile + ") -----");
            p.tail(lines).forEach(out::println);
        }
    }

    private void signal(String signal) {
        try {
            Process kill = new ProcessBuilder("kill", signal, Long.toString(process.pid()))
                    .redirectErrorStream(true).start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                kill.destroyForcibly();
                throw new IllegalStateException("kill " + signal + " failed for " + name + " (pid " + pid() + ")");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot send " + signal + " to " + name, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while signalling " + name, e);
        }
    }

    private void reap(Duration timeout) {
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException(name + " (pid " + pid() + ") did not exit within " + timeout);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void killAllLeftovers() {
        for (ManagedProcess p : LIVE) {
            if (p.process.isAlive()) {
                try {
                    p.resume(); // SIGKILL works on a stopped JVM too, but CONT first leaves no stopped orphan
                } catch (RuntimeException ignored) {
                    // best effort at shutdown
                }
                p.process.destroyForcibly();
            }
        }
    }
}
