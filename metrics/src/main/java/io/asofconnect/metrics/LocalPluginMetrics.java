package io.asofconnect.metrics;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.MetricValueProvider;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.Sensor;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A {@link PluginMetrics} over a private registry, for a host that gives none: a context without
 * {@code pluginMetrics()} (a worker older than Kafka 4.1, or a test's own context). The metrics then still
 * count, and can be read from {@link #registry()}, but reach no reporter.
 */
public final class LocalPluginMetrics implements PluginMetrics, AutoCloseable {
    static final String GROUP = "plugins";
    private final Metrics registry = new Metrics();
    private final Map<String, String> tags;

    public LocalPluginMetrics(Map<String, String> tags) {
        this.tags = Map.copyOf(tags);
    }

    public LocalPluginMetrics() {
        this(Map.of());
    }

    @Override
    public MetricName metricName(String name, String description, LinkedHashMap<String, String> extraTags) {
        LinkedHashMap<String, String> all = new LinkedHashMap<>(tags);
        all.putAll(extraTags);
        return registry.metricName(name, GROUP, description, all);
    }

    @Override
    public void addMetric(MetricName name, MetricValueProvider<?> provider) {
        registry.addMetric(name, provider);
    }

    @Override
    public void removeMetric(MetricName name) {
        registry.removeMetric(name);
    }

    @Override
    public Sensor addSensor(String name) {
        return registry.sensor(name);
    }

    @Override
    public void removeSensor(String name) {
        registry.removeSensor(name);
    }

    /** The registry behind it, to read values from. */
    public Metrics registry() {
        return registry;
    }

    @Override
    public void close() {
        registry.close();
    }
}
