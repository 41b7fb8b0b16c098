package io.asofconnect.it.harness;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What most integration-test classes start once: a work directory, the plugin zip unpacked into a
 * {@code plugin.path}, a Postgres server and a KRaft broker, plus any distributed workers the class asks
 * for. {@link #close()} stops them in reverse order, also after a start that failed half-way, and then
 * fails the class if a problem line of the plugin in any worker's log does not name its connector and task
 * ({@link ProblemLogLines}).
 */
public final class TestPipeline implements AutoCloseable {
    private final Path work;
    private final Path plugins;
    private final List<AutoCloseable> started = new ArrayList<>();
    private PostgresServer postgres;
    private KafkaBroker broker;

    private TestPipeline(String name) {
        this.work = TestPaths.workDir(name);
        this.plugins = PluginInstaller.install(TestPaths.pluginZip(), work.resolve("plugins"));
    }

    /** Starts Postgres and the broker for the test class {@code name} (its work directory's name). */
    public static TestPipeline start(String name) {
        TestPipeline p = new TestPipeline(name);
        try {
            p.postgres = p.track(PostgresServer.start(p.work, "pg"));
            p.broker = p.track(KafkaBroker.start(p.work));
            return p;
        } catch (RuntimeException | Error e) {
            p.close();
            throw e;
        }
    }

    /** A distributed worker in Connect group {@code groupId}, stopped by {@link #close()} if still running. */
    public ConnectWorker distributedWorker(String name, String groupId) {
        return distributedWorker(name, groupId, Map.of());
    }

    /** As {@link #distributedWorker(String, String)}, with {@code extra} worker properties added or overriding. */
    public ConnectWorker distributedWorker(String name, String groupId, Map<String, String> extra) {
        Map<String, String> properties = ConnectWorker.distributedProperties(broker, groupId, plugins, FreePorts.pick());
        properties.putAll(extra);
        return track(ConnectWorker.distributed(name, work, properties));
    }

    private <T extends AutoCloseable> T track(T resource) {
        started.add(resource);
        return resource;
    }

    public Path work() {
        return work;
    }

    public Path plugins() {
        return plugins;
    }

    public PostgresServer postgres() {
        return postgres;
    }

    public KafkaBroker broker() {
        return broker;
    }

    @Override
    public void close() {
        RuntimeException first = null;
        for (int i = started.size() - 1; i >= 0; i--) {
            try {
                started.get(i).close();
            } catch (Exception e) {
                if (first == null) {
                    first = new IllegalStateException("stopping a test process failed", e);
                }
            }
        }
        started.clear();
        if (first != null) {
            throw first;
        }
        List<String> unnamed = ProblemLogLines.unnamedUnder(work);
        if (!unnamed.isEmpty()) {
            throw new AssertionError("problem lines of the plugin that do not name their connector and task:\n"
                    + String.join("\n", unnamed));
        }
    }
}
