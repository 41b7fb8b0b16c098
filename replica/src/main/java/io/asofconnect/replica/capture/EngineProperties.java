package io.asofconnect.replica.capture;

import io.asofconnect.replica.config.ReplicaConfig;

import java.util.Properties;
import java.util.stream.Collectors;

/**
 * The Debezium engine and Postgres connector properties of a replica. Choices fixed here, and why:
 * {@code decimal.handling.mode=precise} so numerics round-trip exactly as {@code BigDecimal};
 * {@code time.precision.mode=adaptive_time_microseconds} so timestamps keep their microseconds (Connect's
 * own types would cut them to millis); {@code snapshot.mode=initial} so a store without offsets starts with
 * a snapshot and a store with them resumes; {@code tombstones.on.delete=false} since a delete is already a
 * tombstone version; {@code offset.flush.interval.ms=0} so the LSN is confirmed to the server after every
 * batch (our offsets are durable with the batch anyway).
 */
public final class EngineProperties {

    private EngineProperties() {
    }

    /** The engine's name: the namespace of its offsets, and how our offset store finds the replica. */
    public static String engineName(ReplicaConfig config) {
        return config.name();
    }

    /**
     * The engine's properties for the replica of {@code config}, its offsets kept by {@code offsetStore} (a Connect
     * {@code OffsetBackingStore} class name): the replica names its own, which lives in the package that starts
     * this one, so that capture need not name it back.
     */
    public static Properties of(ReplicaConfig config, String offsetStore) {
        Properties p = new Properties();
        // Pass-through first, so that the options we control always win (ReplicaConfig rejects them anyway).
        config.debeziumOverrides().forEach((k, v) -> {
            if (v != null) {
                p.setProperty(k, v);
            }
        });
        p.putIfAbsent("decimal.handling.mode", "precise");
        p.putIfAbsent("time.precision.mode", "adaptive_time_microseconds");
        p.putIfAbsent("heartbeat.interval.ms", "10000");
        p.putIfAbsent("offset.flush.interval.ms", "0");
        p.putIfAbsent("errors.max.retries", "-1");
        // Debezium hands over a partial batch only after this long (500 ms by default), and its streaming loop
        // sleeps this long whenever the slot has nothing new: a watermark probe waits for both, and every held
        // record with it. From 50 ms to 10 ms, probe to watermark went from p90 213-295 ms to 185 ms and from a
        // maximum of 312-332 ms to 207-220 ms (WatermarkLagBenchmark). The cost: an idle engine wakes 100 times a
        // second instead of 20; a busy one fills its batches before the interval anyway.
        p.putIfAbsent("poll.interval.ms", "10");
        // After a lost connection the connector waits this long before reconnecting (Debezium's default is 10 s).
        p.putIfAbsent("retriable.restart.connector.wait.ms", "3000");

        // Never a second snapshot over stored history: it would re-put rows and change answers behind the watermark.
        p.setProperty("snapshot.mode", "initial");
        p.setProperty("name", engineName(config));
        p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        p.setProperty("offset.storage", offsetStore);
        p.setProperty("topic.prefix", topicPrefix(config.name()));
        p.setProperty("database.hostname", config.hostname());
        p.setProperty("database.port", Integer.toString(config.port()));
        p.setProperty("database.user", config.user());
        if (config.password() != null) {
            p.setProperty("database.password", config.password().value());
        }
        p.setProperty("database.dbname", config.dbname());
        p.setProperty("database.sslmode", config.sslMode());
        p.setProperty("plugin.name", "pgoutput");
        p.setProperty("slot.name", config.slotName());
        p.setProperty("publication.name", config.publicationName());
        p.setProperty("publication.autocreate.mode", "filtered");
        p.setProperty("table.include.list", config.tables().stream().map(EngineProperties::exact).collect(Collectors.joining(",")));
        if (!config.keyColumns().isEmpty()) {
            p.setProperty("message.key.columns", config.keyColumnsText());
        }
        p.setProperty("tombstones.on.delete", "false");
        p.setProperty("message.prefix.include.list", exact(ProbeMessage.prefixFor(config.name())));
        // Only the connector flushes LSNs, and only after our commit: the driver must not confirm on its own.
        p.setProperty("lsn.flush.mode", "connector");
        return p;
    }

    /** Debezium's include lists are regular expressions: match exactly this name. */
    static String exact(String name) {
        StringBuilder sb = new StringBuilder();
        for (char ch : name.toCharArray()) {
            if ("\\^$.|?*+()[]{}".indexOf(ch) >= 0) {
                sb.append('\\');
            }
            sb.append(ch);
        }
        return sb.toString();
    }

    static String topicPrefix(String replicaName) {
        return "asof_" + replicaName.replaceAll("[^A-Za-z0-9_]", "_");
    }
}
