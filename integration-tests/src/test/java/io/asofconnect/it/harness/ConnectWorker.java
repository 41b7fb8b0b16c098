package io.asofconnect.it.harness;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A Kafka Connect worker in its own JVM. Its classpath is Kafka, Connect and logging only (the module's
 * runtime scope); our plugin reaches it solely through {@code plugin.path}, so class-loader isolation is real.
 */
public final class ConnectWorker implements AutoCloseable {

    private static final Duration START_TIMEOUT = Duration.ofSeconds(120);
    /** Short group timeouts so that crash, rebalance and zombie tests finish in seconds. */
    public static final int SESSION_TIMEOUT_MS = 6000;

    private final String name;
    private final int restPort;
    private final Path dir;
    private final List<String> launchArgs;
    private final Map<String, String> environment;
    private ManagedProcess process;

    private ConnectWorker(String name, int restPort, Path dir, List<String> launchArgs,
                          Map<String, String> environment) {
        this.name = name;
        this.restPort = restPort;
        this.dir = dir;
        this.launchArgs = launchArgs;
        this.environment = Map.copyOf(environment);
    }

    /**
     * Properties of a distributed worker in group {@code groupId}; workers of one group share the three
     * internal topics. Callers may add or override keys before {@link #distributed}.
     */
    public static Map<String, String> distributedProperties(KafkaBroker broker, String groupId, Path pluginPath,
                                                            int restPort) {
        Map<String, String> p = new TreeMap<>();
        p.put("bootstrap.servers", broker.bootstrapServers());
        p.put("group.id", groupId);
        p.put("config.storage.topic", groupId + "-configs");
        p.put("offset.storage.topic", groupId + "-offsets");
        p.put("status.storage.topic", groupId + "-status");
        p.put("config.storage.replication.factor", "1");
        p.put("offset.storage.replication.factor", "1");
        p.put("status.storage.replication.factor", "1");
        p.put("offset.storage.partitions", "2");
        p.put("status.storage.partitions", "2");
        p.put("key.converter", "org.apache.kafka.connect.json.JsonConverter");
        p.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
        p.put("key.converter.schemas.enable", "true");
        p.put("value.converter.schemas.enable", "true");
        p.put("listeners", "http://127.0.0.1:" + restPort);
        p.put("rest.advertised.host.name", "127.0.0.1");
        p.put("rest.advertised.port", Integer.toString(restPort));
        p.put("plugin.path", pluginPath.toString());
        p.put("offset.flush.interval.ms", "2000");
        p.put("session.timeout.ms", Integer.toString(SESSION_TIMEOUT_MS));
        p.put("heartbeat.interval.ms", "1500");
        p.put("rebalance.timeout.ms", "20000");
        // After a worker vanishes, Connect waits this long before moving its tasks (default: 5 minutes).
        p.put("scheduled.rebalance.max.delay.ms", "3000");
        p.put("task.shutdown.graceful.timeout.ms", "10000");
        p.put("consumer.session.timeout.ms", Integer.toString(SESSION_TIMEOUT_MS));
        p.put("consumer.heartbeat.interval.ms", "1500");
        p.put("connector.client.config.override.policy", "All");
        p.put("config.providers", "file");
        p.put("config.providers.file.class", "org.apache.kafka.common.config.provider.FileConfigProvider");
        return p;
    }

    public static ConnectWorker distributed(String name, Path workDir, Map<String, String> properties) {
        return distributed(name, workDir, properties, Map.of());
    }

    /**
     * A distributed worker whose JVM also gets {@code environment}: with {@code EnvVarConfigProvider} in the worker
     * properties, {@code ${env:NAME}} in a shared connector config then resolves differently on each worker.
     * The working directory is the worker's own ({@code workDir/name}), as {@link ManagedProcess} arranges.
     */
    public static ConnectWorker distributed(String name, Path workDir, Map<String, String> properties,
                                            Map<String, String> environment) {
        Path dir = workDir.resolve(name);
        Path config = PropertiesFiles.write(dir.resolve("worker.properties"), properties);
        int port = Integer.parseInt(properties.get("rest.advertised.port"));
        ConnectWorker worker = new ConnectWorker(name, port, dir, List.of(
                "org.apache.kafka.connect.cli.ConnectDistributed", config.toString()), environment);
        worker.start();
        return worker;
    }

    /**
     * A standalone worker from a properties file already written (e.g. a config example with its placeholders
     * filled in) and connector files ({@code .json} or {@code .properties}).
     */
    public static ConnectWorker standalone(String name, Path workDir, Path workerProperties, int restPort,
                                           List<Path> connectorFiles) {
        List<String> args = new ArrayList<>();
        args.add("org.apache.kafka.connect.cli.ConnectStandalone");
        args.add(workerProperties.toString());
        connectorFiles.forEach(f -> args.add(f.toString()));
        ConnectWorker worker = new ConnectWorker(name, restPort, workDir.resolve(name), List.copyOf(args),
                Map.of());
        worker.start();
        return worker;
    }

    public ConnectRest rest() {
        return new ConnectRest(restUrl());
    }

    public String restUrl() {
        return "http://127.0.0.1:" + restPort;
    }

    /** The id Connect reports as {@code worker_id} in status entries. */
    public String workerId() {
        return "127.0.0.1:" + restPort;
    }

    /** The worker's own directory: its working directory, log and properties live here. */
    public Path dir() {
        return dir;
    }

    public ManagedProcess process() {
        return process;
    }

    public Path logFile() {
        return process.logFile();
    }

    /** Starts the JVM again with the same configuration (same group, same REST port). */
    public void restart() {
        if (process != null && process.isAlive()) {
            throw new IllegalStateException(name + " is still running; stop or kill it first");
        }
        start();
    }

    public void kill() {
        process.kill();
    }

    public void stop() {
        process.stop();
    }

    public void pause() {
        process.pause();
    }

    public void resume() {
        process.resume();
    }

    @Override
    public void close() {
        if (process != null) {
            process.stop();
        }
    }

    private void start() {
        // In production, connect-distributed.sh's heap and our classes at INFO.
        boolean production = ManagedProcess.productionJvms();
        Path log4j = PropertiesFiles.log4j2(dir, production ? Map.of() : Map.of("io.asofconnect", "DEBUG"));
        List<String> jvm = List.of(production ? "-Xms256m" : "-Xms64m", production ? "-Xmx2g" : "-Xmx640m",
                "-Dlog4j2.configurationFile=" + log4j.toUri());
        String main = launchArgs.get(0);
        process = ManagedProcess.startJava(name, TestPaths.workerClasspath(), jvm, main,
                launchArgs.subList(1, launchArgs.size()), dir.resolve("worker.log"), environment);
        rest().awaitReady(START_TIMEOUT, process);
    }
}
