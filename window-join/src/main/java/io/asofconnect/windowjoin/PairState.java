package io.asofconnect.windowjoin;

import io.asofconnect.windowjoin.state.Side;

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

    /** Both partitions have replayed what the target had committed: windows may close again. */
    boolean live() {
        return left.caughtUp && right.caughtUp;
    }
}
