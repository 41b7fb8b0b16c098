package io.asofconnect.replica;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * Records in the shape Debezium's Postgres connector emits for one replica's table {@code public.t} (key
 * {@code id}): streamed and snapshot changes, watermark probes and heartbeats, each with the offset of its LSN.
 * The capture tests build their batches from these, so that they all feed the applier the same shape.
 */
final class ChangeRecords {
    private static final Schema KEY = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build();
    private static final Schema NULLABLE_KEY = SchemaBuilder.struct().field("id", Schema.OPTIONAL_INT32_SCHEMA).build();
    private static final Schema SOURCE = SchemaBuilder.struct()
            .field("schema", Schema.STRING_SCHEMA).field("table", Schema.STRING_SCHEMA)
            .field("lsn", Schema.OPTIONAL_INT64_SCHEMA).field("ts_ms", Schema.INT64_SCHEMA)
            .field("snapshot", Schema.OPTIONAL_STRING_SCHEMA).build();
    private static final Schema ENVELOPE = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA)
            .field("source", SOURCE).field("after", SchemaBuilder.struct().optional().field("id", Schema.INT32_SCHEMA).build()).build();
    private static final Schema MESSAGE = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA)
            .field("message", SchemaBuilder.struct().field("prefix", Schema.STRING_SCHEMA).field("content", Schema.BYTES_SCHEMA).build()).build();
    private static final Schema HEARTBEAT = SchemaBuilder.struct().field("ts_ms", Schema.INT64_SCHEMA).build();
    /** The probe time of {@link #probe(long)}, for tests that do not care when the probe was taken. */
    private static final long DEFAULT_PROBE_TIME = 5_000;

    private final Map<String, String> partition;
    private final String probePrefix;

    /** Records of the replica named {@code replicaName}: its probes carry the prefix that replica writes. */
    ChangeRecords(String replicaName) {
        this.partition = Map.of("server", "asof_" + replicaName);
        // Spelled out rather than taken from WatermarkProber, so that a changed prefix there fails these tests.
        this.probePrefix = "asof-connect.watermark." + replicaName;
    }

    /** The LSN in a record's source offset. */
    static long lsn(SourceRecord r) {
        return ((Number) r.sourceOffset().get("lsn")).longValue();
    }

    /** A streamed insert of row {@code id}. */
    SourceRecord row(long lsn, int id) {
        return change(lsn, id, null, offset(lsn), 1L);
    }

    /** A row of the initial snapshot, read at 1 ms. */
    SourceRecord snapshotRow(long lsn, int id) {
        return snapshotRow(lsn, id, 1L);
    }

    /** A row of the initial snapshot, read at {@code readAt} (its {@code source.ts_ms}). */
    SourceRecord snapshotRow(long lsn, int id, long readAt) {
        Map<String, Object> off = new HashMap<>(offset(lsn));
        off.put("snapshot", "INITIAL");
        return change(lsn, id, "true", off, readAt);
    }

    /** A change whose key column is null: the mapper rejects it, failing its batch. */
    SourceRecord nullKeyRow(long lsn) {
        Struct source = new Struct(SOURCE).put("schema", "public").put("table", "t").put("lsn", lsn).put("ts_ms", 1L);
        Struct value = new Struct(ENVELOPE).put("op", "c").put("source", source)
                .put("after", new Struct(ENVELOPE.field("after").schema()).put("id", 0));
        return new SourceRecord(partition, offset(lsn), "t", NULLABLE_KEY, new Struct(NULLABLE_KEY), ENVELOPE, value);
    }

    /** A watermark probe taken at 5,000 ms. */
    SourceRecord probe(long lsn) {
        return probe(lsn, DEFAULT_PROBE_TIME);
    }

    /** A watermark probe (a logical decoding message with this replica's prefix) taken at {@code probeTime}. */
    SourceRecord probe(long lsn, long probeTime) {
        Struct m = new Struct(MESSAGE.field("message").schema()).put("prefix", probePrefix)
                .put("content", Long.toString(probeTime).getBytes(StandardCharsets.UTF_8));
        return new SourceRecord(partition, offset(lsn), "m", null, null, MESSAGE, new Struct(MESSAGE).put("op", "m").put("message", m));
    }

    /** A heartbeat, which repeats the offset of the last change the connector saw. */
    SourceRecord heartbeat(long lsn) {
        return new SourceRecord(partition, offset(lsn), "hb", null, null, HEARTBEAT, new Struct(HEARTBEAT).put("ts_ms", 1L));
    }

    private SourceRecord change(long lsn, int id, String snapshot, Map<String, Object> offset, long tsMs) {
        Struct source = new Struct(SOURCE).put("schema", "public").put("table", "t").put("lsn", lsn).put("ts_ms", tsMs).put("snapshot", snapshot);
        Struct value = new Struct(ENVELOPE).put("op", snapshot == null ? "c" : "r").put("source", source)
                .put("after", new Struct(ENVELOPE.field("after").schema()).put("id", id));
        return new SourceRecord(partition, offset, "t", KEY, new Struct(KEY).put("id", id), ENVELOPE, value);
    }

    private static Map<String, Object> offset(long lsn) {
        return Map.of("lsn", lsn, "lsn_proc", lsn, "txId", 7L, "ts_usec", 1_000L);
    }
}
