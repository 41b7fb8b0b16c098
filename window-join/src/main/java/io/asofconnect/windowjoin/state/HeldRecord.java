package io.asofconnect.windowjoin.state;

import org.apache.kafka.connect.data.Struct;

/**
 * A record held in the window state: where it came from, its join key (canonical bytes), its event time, its value,
 * whether it has matched a record of the other side, and the lowest offset of those partners
 * ({@link #NO_PARTNER} while it has none).
 */
public record HeldRecord(int partition, Side side, byte[] key, long time, long offset, Struct value,
                         boolean matched, long minPartner) {
    public static final long NO_PARTNER = Long.MAX_VALUE;

    public HeldRecord matchedWith(long partnerOffset) {
        return new HeldRecord(partition, side, key, time, offset, value, true, Math.min(minPartner, partnerOffset));
    }
}
