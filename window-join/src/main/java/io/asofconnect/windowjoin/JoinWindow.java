package io.asofconnect.windowjoin;

import io.asofconnect.windowjoin.state.Side;

/**
 * The interval join's bounds: a left record at {@code t} matches right records in {@code [t - before, t + after]},
 * both ends inclusive (as Flink SQL's BETWEEN and Kafka Streams' {@code JoinWindows}), and the lateness that each
 * partition's watermark trails its greatest event time by. Arithmetic saturates: event times near the ends of the
 * long range must not wrap around.
 */
public record JoinWindow(long beforeMs, long afterMs, long latenessMs) {

    /** The times of the other side's records that a record of {@code side} at {@code time} matches, inclusive. */
    public long[] partnerRange(Side side, long time) {
        return side == Side.LEFT
                ? new long[]{minus(time, beforeMs), plus(time, afterMs)}
                : new long[]{minus(time, afterMs), plus(time, beforeMs)};
    }

    /**
     * The greatest time of the other side that can still match a record of {@code side} at {@code time}: once the
     * other side's watermark is past it, no record that is not late can match, and the record's window is closed.
     */
    public long windowEnd(Side side, long time) {
        return plus(time, side == Side.LEFT ? afterMs : beforeMs);
    }

    /** The watermark after seeing {@code time}. */
    public long watermarkAfter(long time) {
        return minus(time, latenessMs);
    }

    static long plus(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? (b > 0 ? Long.MAX_VALUE : Long.MIN_VALUE) : r;
    }

    static long minus(long a, long b) {
        long r = a - b;
        return ((a ^ b) & (a ^ r)) < 0 ? (b > 0 ? Long.MIN_VALUE : Long.MAX_VALUE) : r;
    }
}
