package io.asofconnect.enrich;

import io.asofconnect.common.lookup.VersionLookup;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.sink.SinkRecord;

/**
 * When records reached the connector, as a time on the source database's clock: the read-your-writes bound of
 * {@code enrich.read.your.writes}. Every change committed before a record was produced was committed before the
 * record reached the connector, so once the replica's receipt watermark ({@link VersionLookup#receiptWatermark})
 * has passed this time, the replica has applied all of them. The clock is the replica's reading of the source's
 * ({@link VersionLookup#sourceNow}), so a worker whose own clock is behind the database's cannot make the
 * bound too early.
 */
public final class ReceiptTimes {
    /** A bound that every watermark has passed: read-your-writes is off. */
    public static final long NONE = Long.MIN_VALUE;

    private final VersionLookup lookup;
    private final boolean enabled;

    public ReceiptTimes(VersionLookup lookup, boolean enabled) {
        this.lookup = lookup;
        this.enabled = enabled;
    }

    /** Now, for records that have all been received by now (e.g. the batch of one {@code put}). */
    public long now() {
        return nowLess(0);
    }

    /**
     * {@link #now()} less {@code slackMs}: the bound of a caller that cannot wait for every record separately and
     * settles for the changes committed more than {@code slackMs} before a record reached it.
     */
    public long nowLess(long slackMs) {
        return enabled ? lookup.watermark().sourceNow() - slackMs : NONE;
    }

    /**
     * The bound for {@code record} received at {@code receivedAt} ({@link #now()} then): later when the broker
     * stamped it later under {@code LogAppendTime}, since the broker's clock may be ahead of the source's.
     */
    public long of(ConnectRecord<?> record, long receivedAt) {
        if (!enabled) {
            return NONE;
        }
        if (record instanceof SinkRecord s && s.timestampType() == TimestampType.LOG_APPEND_TIME && s.timestamp() != null) {
            return Math.max(receivedAt, s.timestamp());
        }
        return receivedAt;
    }
}
