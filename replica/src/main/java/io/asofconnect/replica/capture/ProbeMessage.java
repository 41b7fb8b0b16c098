package io.asofconnect.replica.capture;

import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The watermark probe as it travels through the source's WAL: written by {@link WatermarkProber} with
 * {@code pg_logical_emit_message}, read back from the slot by {@link BatchApplier}. One codec, so that the two
 * sides cannot drift apart.
 *
 * <p>The message's prefix names the replica ({@link #prefixFor}); its content is {@code "<stamp> <token>
 * <instance>"}: the server's clock in epoch millis (the server writes it, so that probes and commit timestamps
 * share one clock), then the tracker's probe token and instance, from which the applier raises the receipt
 * watermark. Older replicas wrote the stamp alone; both forms are read.
 */
final class ProbeMessage {
    /**
     * Epoch millis, computed by the server so the probe and the commit timestamps share one clock; the same
     * reading is returned, so that readers can tell the time on that clock (see WatermarkTracker#sourceNow).
     *
     * <p>{@code txid_current()} gives the statement's transaction an id, so that its commit flushes the WAL, the
     * message included (under {@code synchronous_commit=on}, Postgres' default). A walsender sends only flushed
     * WAL, and a message alone is flushed by the WAL writer, every {@code wal_writer_delay} (200 ms by default):
     * probe to watermark took 317 ms (median) without the flush and 148 ms with it, and every record held for
     * read-your-writes waits that long. The cost is one transaction id per probe. Postgres 17's {@code flush}
     * argument of {@code pg_logical_emit_message} does the same, but older servers are supported.
     * Parameters: the prefix, then {@link #afterStamp}.
     */
    static final String EMIT = "SELECT t, pg_logical_emit_message(false, ?, t::text || ?), txid_current()"
            + " FROM (SELECT floor(extract(epoch from clock_timestamp()) * 1000)::bigint AS t) now";

    /** What a probe carries; {@code instance} -1 and {@code token} {@link Long#MIN_VALUE} in the older form. */
    record Probe(long stamp, long token, long instance) {
    }

    private ProbeMessage() {
    }

    /** The message prefix that marks the probes of replica {@code replicaName}. */
    static String prefixFor(String replicaName) {
        return "asof-connect.watermark." + replicaName;
    }

    /** The content the server appends to its stamp: the token and instance of the tracker that sent the probe. */
    static String afterStamp(long token, long instance) {
        return " " + token + " " + instance;
    }

    /** The text of {@code r} when it is a logical decoding message with {@code prefix}, else null. */
    static String contentOf(SourceRecord r, String prefix) {
        if (!(r.value() instanceof Struct v) || v.schema().field("message") == null || !"m".equals(v.getString("op"))) {
            return null;
        }
        Struct m = v.getStruct("message");
        if (m == null || !prefix.equals(m.getString("prefix"))) {
            return null;
        }
        Object content = m.get("content");
        if (content instanceof byte[] b) {
            return new String(b, StandardCharsets.UTF_8);
        }
        if (content instanceof ByteBuffer bb) {
            ByteBuffer d = bb.duplicate();
            byte[] b = new byte[d.remaining()];
            d.get(b);
            return new String(b, StandardCharsets.UTF_8);
        }
        return null;
    }

    /** The probe {@code text} holds, or null when it is in neither form. */
    static Probe parse(String text) {
        try {
            String[] parts = text.trim().split(" ");
            if (parts.length == 1) {
                return new Probe(Long.parseLong(parts[0]), Long.MIN_VALUE, -1);
            }
            if (parts.length == 3) {
                return new Probe(Long.parseLong(parts[0]), Long.parseLong(parts[1]), Long.parseLong(parts[2]));
            }
        } catch (NumberFormatException e) {
            // Neither form: the caller reports it.
        }
        return null;
    }
}
