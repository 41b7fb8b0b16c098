package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** Options of a replica on {@code public.t} for tests that feed its applier by hand: nothing connects to the host. */
final class CaptureOptions {
    private CaptureOptions() {
    }

    /** The options of replica {@code name} (slot {@code name_slot}) keeping its store in {@code dir}; the caller adds the rest. */
    static Map<String, Object> of(String name, Path dir) {
        Map<String, Object> p = new HashMap<>();
        p.put(ReplicaConfig.NAME, name);
        p.put(ReplicaConfig.HOSTNAME, "127.0.0.1");
        p.put(ReplicaConfig.USER, "postgres");
        p.put(ReplicaConfig.DBNAME, "postgres");
        p.put(ReplicaConfig.TABLES, "public.t");
        p.put(ReplicaConfig.SLOT_NAME, name + "_slot");
        p.put(ReplicaConfig.PATH, dir.toString());
        return p;
    }
}
