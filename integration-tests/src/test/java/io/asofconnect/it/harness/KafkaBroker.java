package io.asofconnect.it.harness;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.nio.file.Path;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;

/**
 * A single-node KRaft Kafka (combined broker and controller, static quorum) in its own JVM, started from the
 * Maven jars: the storage is formatted first with {@code kafka.tools.StorageTool}, then {@code kafka.Kafka} runs.
 */
public final class KafkaBroker implements AutoCloseable {

    private static final Duration FORMAT_TIMEOUT = Duration.ofSeconds(90);
    private static final Duration START_TIMEOUT = Duration.ofSeconds(120);

    private final Path dir;
    private final int brokerPort;
    private final int controllerPort;
    private ManagedProcess process;

    private KafkaBroker(Path dir) {
        this.dir = dir;
        this.brokerPort = FreePorts.pick();
        this.controllerPort = FreePorts.pick();
    }

    public static KafkaBroker start(Path workDir) {
        KafkaBroker broker = new KafkaBroker(workDir.resolve("kafka"));
        broker.formatAndStart();
        return broker;
    }

    public String bootstrapServers() {
        return "127.0.0.1:" + brokerPort;
    }

    public ManagedProcess process() {
        return process;
    }

    /** Topics for historical event times never lose data to retention (the broker deletes old CreateTimes). */
    public void createTopic(String topic, int partitions) {
        try (Admin admin = admin()) {
            NewTopic newTopic = new NewTopic(topic, partitions, (short) 1)
                    .configs(Map.of("retention.ms", "-1", "retention.bytes", "-1"));
            admin.createTopics(List.of(newTopic)).all().get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while creating topic " + topic, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("Could not create topic " + topic + " on " + bootstrapServers(), e);
        }
    }

    public Admin admin() {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        return Admin.create(props);
    }

    @Override
    public void close() {
        if (process != null) {
            process.stop();
        }
    }

    private void formatAndStart() {
        Path config = PropertiesFiles.write(dir.resolve("server.properties"), serverProperties());
        Path log4j = PropertiesFiles.log4j2(dir, Map.of());
        String classpath = TestPaths.workerClasspath();
        // In production, kafka-server-start.sh's heap.
        boolean production = ManagedProcess.productionJvms();
        List<String> jvm = List.of(production ? "-Xms1g" : "-Xms64m", production ? "-Xmx1g" : "-Xmx512m",
                "-Dlog4j2.configurationFile=" + log4j.toUri());

        ManagedProcess format = ManagedProcess.startJava("kafka-storage-format", classpath, jvm,
                "kafka.tools.StorageTool",
                List.of("format", "-t", Uuid.randomUuid().toString(), "-c", config.toString()),
                dir.resolve("storage-format.log"));
        waitForExit(format, FORMAT_TIMEOUT);

        process = ManagedProcess.startJava("kafka-broker", classpath, jvm, "kafka.Kafka",
                List.of(config.toString()), dir.resolve("broker.log"));
        awaitReady();
    }

    private Map<String, String> serverProperties() {
        Map<String, String> p = new TreeMap<>();
        p.put("process.roles", "broker,controller");
        p.put("node.id", "1");
        p.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        p.put("listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort);
        p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort);
        p.put("controller.listener.names", "CONTROLLER");
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.put("log.dirs", dir.resolve("data").toString());
        p.put("num.partitions", "1");
        p.put("offsets.topic.replication.factor", "1");
        p.put("offsets.topic.num.partitions", "5");
        p.put("transaction.state.log.replication.factor", "1");
        p.put("transaction.state.log.min.isr", "1");
        p.put("transaction.state.log.num.partitions", "5");
        p.put("share.coordinator.state.topic.replication.factor", "1");
        p.put("share.coordinator.state.topic.min.isr", "1");
        p.put("group.initial.rebalance.delay.ms", "0");
        // Session timeouts of a few seconds make the crash and zombie tests fast; allow them.
        p.put("group.min.session.timeout.ms", "2000");
        p.put("auto.create.topics.enable", "false");
        p.put("log.retention.ms", "-1");
        return p;
    }

    private void awaitReady() {
        Instant deadline = Instant.now().plus(START_TIMEOUT);
        RuntimeException last = null;
        while (Instant.now().isBefore(deadline)) {
            if (!process.isAlive()) {
                throw new IllegalStateException("Kafka broker exited during start-up; see " + process.logFile());
            }
            try (Admin admin = admin()) {
                Collection<?> nodes = admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
                if (!nodes.isEmpty()) {
                    return;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while waiting for the broker", e);
            } catch (ExecutionException | TimeoutException | RuntimeException e) {
                last = new IllegalStateException(e);
            }
            Waits.pause(Duration.ofMillis(500));
        }
        throw new IllegalStateException("Kafka broker not ready within " + START_TIMEOUT + "; see "
                + process.logFile(), last);
    }

    private static void waitForExit(ManagedProcess p, Duration timeout) {
        Instant deadline = Instant.now().plus(timeout);
        while (p.isAlive()) {
            if (Instant.now().isAfter(deadline)) {
                p.kill();
                throw new IllegalStateException(p.name() + " did not finish within " + timeout + "; see " + p.logFile());
            }
            Waits.pause(Duration.ofMillis(200));
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException(p.name() + " failed with exit code " + p.exitValue() + "; see " + p.logFile());
        }
    }
}
