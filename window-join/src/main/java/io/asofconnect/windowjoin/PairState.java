package io.asofconnect.windowjoin;

import io.asofconnect.windowjoin.state.Side;

import java.util.concurrent.TimeUnit;

/**
 * Partition {@code p} of the left topic and partition {@code p} of the right topic: co-partitioned inputs put the
 * records with one key in the same partition number of both, so a pair joins on its own. The output rows go with
 * the left partition's next commit; both partitions are always flushed together.
 */
final class PairState {
    final int partition;
    final SideState left;
    final SideState right;

    PairState(int partition, SideState left, SideState right) {
        this.partition = partition;
        this.left = left;
        this.right = right;
    }

    SideState side(Side side) {
        return side == Side.LEFT ? left : right;
    }

    /** When the rebuild of this pair began ({@link System#nanoTime}), or -1 when it is not being rebuilt. */
    private long rebuildStartedNanos = -1;

    /** Both partitions have replayed what the target had committed: windows may close again. */
    boolean live() {
        return left.caughtUp && right.caughtUp;
    }

    /** The pair replays from its held offsets: until it is live, neither side's held offset may rise. */
    void startRebuild(long nowNanos) {
        rebuildStartedNanos = nowNanos;
        left.rebuilding = true;
        right.rebuilding = true;
    }

    /** Whether a rebuild is under way and both partitions have now caught up. */
    boolean rebuildDone() {
        return rebuildStartedNanos >= 0 && live();
    }

    /** Ends the rebuild; returns how long it took, in ms. */
    long finishRebuild(long nowNanos) {
        long ms = TimeUnit.NANOSECONDS.toMillis(nowNanos - rebuildStartedNanos);
        rebuildStartedNanos = -1;
        left.rebuilding = false;
        right.rebuilding = false;
        return ms;
    }
}
