package io.asofconnect.common.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** What every connector of the plugin answers alike: its version, and one task config per task. */
public final class PluginVersion {
    /** The plugin's version, from the jar manifest (every module of the archive carries the same one). */
    public static final String VERSION = version();

    private PluginVersion() {
    }

    private static String version() {
        String v = PluginVersion.class.getPackage().getImplementationVersion();
        return v != null ? v : "0.1.0-SNAPSHOT";
    }

    /** {@code maxTasks} copies of the connector's config: Connect spreads the partitions over the tasks. */
    public static List<Map<String, String>> sameConfigForEachTask(Map<String, String> props, int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>(maxTasks);
        for (int i = 0; i < maxTasks; i++) {
            configs.add(props);
        }
        return configs;
    }
}
