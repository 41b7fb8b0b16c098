package io.asofconnect.metrics;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Against Kafka's own PluginMetricsImpl over one registry, as a worker gives each task its own view of one registry. */
class MeteredTest {

    private static double value(Metrics registry, String name, Map<String, String> tags) {
        MetricName n = registry.metricName(name, "plugins", "", tags);
        return ((Number) registry.metric(n).metricValue()).doubleValue();
    }

    @Test
    void twoTasksOnOneWorkerCountApartAndGaugesReadTheirOwnValue() {
        try (Metrics worker = new Metrics()) {
            Map<String, String> t0 = Map.of("connector", "a", "task", "0");
            Map<String, String> t1 = Map.of("connector", "b", "task", "0");
            Metered a = new Metered(new PluginMetricsImpl(worker, t0));
            Metered b = new Metered(new PluginMetricsImpl(worker, t1));
            Metered.Counter ca = a.counter("rows", "rows");
            Metered.Counter cb = b.counter("rows", "rows");
            ca.record(3);
            cb.record(5);
            cb.increment();
            int[] held = {7};
            a.gauge("held", "held records", () -> held[0]);
            Metered.Distribution d = a.distribution("latency-ms", "latency");
            d.record(2);
            d.record(10);

            assertThat(value(worker, "rows-total", t0)).isEqualTo(3);
            assertThat(value(worker, "rows-total", t1)).isEqualTo(6);
            assertThat(value(worker, "held", t0)).isEqualTo(7);
            held[0] = 9;
            assertThat(value(worker, "held", t0)).isEqualTo(9);
            assertThat(value(worker, "latency-ms-max", t0)).isEqualTo(10);
            assertThat(value(worker, "latency-ms-avg", t0)).isEqualTo(6);
        }
    }

    @Test
    void aFailingGaugeReadsAsNaNAndATaggedViewAddsItsTag() {
        try (Metrics worker = new Metrics()) {
            Map<String, String> t = Map.of("connector", "a", "task", "0");
            Metered m = new Metered(new PluginMetricsImpl(worker, t)).tagged("replica", "users");
            m.gauge("broken", "a gauge whose source fails", () -> {
                throw new IllegalStateException("closed");
            });
            m.counter("changes", "changes").record(4);
            Map<String, String> tagged = new java.util.LinkedHashMap<>(t);
            tagged.put("replica", "users");
            assertThat(value(worker, "broken", tagged)).isNaN();
            assertThat(value(worker, "changes-total", tagged)).isEqualTo(4);
        }
    }
}
