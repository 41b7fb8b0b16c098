package io.asofconnect.metrics;

import org.apache.kafka.common.metrics.PluginMetrics;

import java.util.function.Supplier;

/** Where a plugin gets its {@link PluginMetrics}: from its host when the host has them, else a local registry. */
public final class HostMetrics {
    private HostMetrics() {
    }

    /**
     * @param fromHost the host's accessor, e.g. {@code context::pluginMetrics}; it may return null (a test's
     *                 context) or not exist at run time (a worker older than KIP-877: a {@link LinkageError})
     */
    public static PluginMetrics orLocal(Supplier<PluginMetrics> fromHost) {
        try {
            PluginMetrics m = fromHost.get();
            if (m != null) {
                return m;
            }
        } catch (LinkageError | UnsupportedOperationException e) {
            // A worker without plugin metrics: ours still count, privately.
        }
        return new LocalPluginMetrics();
    }
}
