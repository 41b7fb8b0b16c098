package io.asofconnect.metrics;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Avg;
import org.apache.kafka.common.metrics.stats.CumulativeSum;
import org.apache.kafka.common.metrics.stats.Max;
import org.apache.kafka.common.metrics.stats.Rate;

import java.util.LinkedHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * Declares a plugin's metrics on the {@link PluginMetrics} the worker hands it (KIP-877), so that they appear
 * in the worker's JMX as {@code kafka.connect:type=plugins,connector=...,task=...} next to Connect's own and
 * are removed with the task. Names follow Kafka's conventions: a counter is {@code <name>-total} and
 * {@code <name>-rate} (per second), a timer or a size is {@code <name>-avg} and {@code <name>-max}.
 */
public final class Metered {
    /**
     * Sensor names are global in the worker's one metrics registry ({@code PluginMetrics.addSensor} hands out an
     * existing sensor of the same name), so two tasks declaring "sink-rows-written" would count into one sensor.
     * Each instance's sensors carry its own number.
     */
    private static final AtomicLong INSTANCES = new AtomicLong();
    private final String sensorPrefix = "asof-" + INSTANCES.incrementAndGet() + "-";
    private final PluginMetrics metrics;
    private final LinkedHashMap<String, String> tags;

    /** @param tags extra tags on every metric, after the worker's own connector and task tags (e.g. the replica's name) */
    public Metered(PluginMetrics metrics, LinkedHashMap<String, String> tags) {
        this.metrics = metrics;
        this.tags = new LinkedHashMap<>(tags);
    }

    public Metered(PluginMetrics metrics) {
        this(metrics, new LinkedHashMap<>());
    }

    /** The same metrics with one more tag. */
    public Metered tagged(String key, String value) {
        LinkedHashMap<String, String> more = new LinkedHashMap<>(tags);
        more.put(key, value);
        return new Metered(metrics, more);
    }

    /** A count of events: {@code <name>-total} and {@code <name>-rate} (events per second). */
    public Counter counter(String name, String what) {
        Sensor s = sensor(name);
        s.add(name(name + "-total", "Total number of " + what), new CumulativeSum());
        s.add(name(name + "-rate", "Number of " + what + " per second"), new Rate());
        return s::record;
    }

    /** A measured quantity (a duration in ms, a size): {@code <name>-avg} and {@code <name>-max} over the recent window. */
    public Distribution distribution(String name, String what) {
        Sensor s = sensor(name);
        s.add(name(name + "-avg", "Average " + what), new Avg());
        s.add(name(name + "-max", "Maximum " + what), new Max());
        return s::record;
    }

    /** A value read when the metric is read. A supplier that throws reports NaN rather than break the reporter. */
    public void gauge(String name, String what, Supplier<? extends Number> value) {
        metrics.addMetric(name(name, what), (Gauge<Double>) (config, now) -> {
            try {
                Number n = value.get();
                return n == null ? Double.NaN : n.doubleValue();
            } catch (RuntimeException e) {
                return Double.NaN;
            }
        });
    }

    private Sensor sensor(String name) {
        return metrics.addSensor(sensorPrefix + name + (tags.isEmpty() ? "" : tags.toString()));
    }

    private MetricName name(String name, String description) {
        return metrics.metricName(name, description, tags);
    }

    /** Adds to a counter. */
    @FunctionalInterface
    public interface Counter {
        void record(double n);

        default void increment() {
            record(1);
        }
    }

    /** Records one measurement. */
    @FunctionalInterface
    public interface Distribution {
        void record(double value);
    }
}
