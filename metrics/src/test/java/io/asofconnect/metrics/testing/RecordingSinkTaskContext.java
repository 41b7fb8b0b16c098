package io.asofconnect.metrics.testing;

import io.asofconnect.metrics.LocalPluginMetrics;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkTaskContext;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** A small real {@link SinkTaskContext} that records what the task asks of the worker. */
public final class RecordingSinkTaskContext implements SinkTaskContext {
    public final Map<TopicPartition, Long> offsets = new HashMap<>();
    public final Set<TopicPartition> paused = new LinkedHashSet<>();
    public final List<String> calls = new ArrayList<>();
    public final Set<TopicPartition> assignment = new LinkedHashSet<>();
    private final Map<String, String> configs;
    private final ErrantRecordReporter reporter;
    public long timeoutMs = -1;
    /** The task's metrics, readable as a worker's reporter would read them. */
    public final LocalPluginMetrics metrics = new LocalPluginMetrics();

    public RecordingSinkTaskContext(Map<String, String> configs, ErrantRecordReporter reporter) {
        this.configs = configs;
        this.reporter = reporter;
    }

    @Override public Map<String, String> configs() { return configs; }
    @Override public void offset(Map<TopicPartition, Long> o) { offsets.putAll(o); calls.add("offset " + o); }
    @Override public void offset(TopicPartition tp, long o) { offsets.put(tp, o); calls.add("offset " + tp + "=" + o); }
    @Override public void timeout(long ms) { timeoutMs = ms; calls.add("timeout " + ms); }
    @Override public Set<TopicPartition> assignment() { return assignment; }
    @Override public void pause(TopicPartition... tps) { paused.addAll(List.of(tps)); calls.add("pause " + List.of(tps)); }
    @Override public void resume(TopicPartition... tps) { paused.removeAll(List.of(tps)); calls.add("resume " + List.of(tps)); }
    @Override public void requestCommit() { calls.add("requestCommit"); }
    @Override public ErrantRecordReporter errantRecordReporter() { return reporter; }
    @Override public PluginMetrics pluginMetrics() { return metrics; }

    /** The current value of one of the task's metrics. */
    public double metric(String name) {
        return metrics.registry().metrics().entrySet().stream().filter(e -> e.getKey().name().equals(name))
                .map(e -> ((Number) e.getValue().metricValue()).doubleValue()).findFirst()
                .orElseThrow(() -> new AssertionError("no metric " + name + " in " + metrics.registry().metrics().keySet()));
    }
}
