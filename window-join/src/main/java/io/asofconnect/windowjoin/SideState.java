package io.asofconnect.windowjoin;

import io.asofconnect.windowjoin.state.Side;
import io.asofconnect.writer.OffsetStore;
import io.asofconnect.writer.PartitionState;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;

/**
 * One input partition of a pair: its writer state (epoch, committed offset, emitted rows), its watermark, and what a
 * rebuild needs to know.
 *
 * <p>The watermark {@code W} is the partition's greatest event time minus the lateness, raised otherwise only by the
 * idle rule. It depends only on the partition's own log (and recorded idle advances), never on how Connect
 * interleaves partitions, so a replay calls late exactly the records the first run called late.
 *
 * <p>Pins: the offsets a rebuild must replay from, counted. Each held record pins its own offset on its side, and
 * the lowest offset of its partners on the other side (its matched flag decides its unmatched row, so the replay
 * must meet a partner again). The lowest pin is the partition's held offset, committed with every flush.
 */
final class SideState {
    /** A record refused as late, to be recorded in the late table by the next flush. */
    record Late(long offset, long time, long watermark) {
    }

    final Side side;
    final PartitionState writer;
    /** The next offset the target held when this state was built: below it, records are replayed. */
    final long replayNext;
    /** This partition's watermark as committed when this state was built (unmatched rows below it were written). */
    final long committedWatermark;
    /** Offsets in [held, replayNext) that the first run refused as late: the replay refuses them again. */
    final Set<Long> lateBefore;
    final List<Late> pendingLate = new ArrayList<>();
    private final TreeMap<Long, Integer> pins = new TreeMap<>();
    long watermark;
    long maxTime = Long.MIN_VALUE;
    long lastRecordNanos;
    /** Where this partition was rewound to: records below it are redeliveries of what no window needs. */
    final long low;
    boolean caughtUp;
    /**
     * The pair is being rebuilt: until both partitions have replayed, the pins only reflect what was replayed so far,
     * so the held offset must not rise above the one the rebuild started from.
     */
    boolean rebuilding;
    /** The first new record that arrived while the twin replayed (-1: none): the partition is paused, to be rewound there. */
    long heldBackFrom = -1;
    /** Rewound here after being held back (-1: not): records until this one were read before the rewind. */
    long rewoundTo = -1;
    /** The first record after a rewind must be the one rewound to; a later one means the log lost it. */
    long expectFirst;

    SideState(Side side, PartitionState writer, long heldOffset, Long watermark, Set<Long> lateBefore, long nowNanos) {
        this.side = side;
        this.writer = writer;
        this.replayNext = writer.committedNext();
        this.committedWatermark = watermark == null ? Long.MIN_VALUE : watermark;
        this.watermark = committedWatermark;
        this.lateBefore = new HashSet<>(lateBefore);
        this.lastRecordNanos = nowNanos;
        this.caughtUp = replayNext == OffsetStore.NO_OFFSET || heldOffset >= replayNext;
        this.low = heldOffset;
        this.expectFirst = caughtUp ? -1L : heldOffset;
    }

    /** Whether a record at {@code offset} was consumed by a committed flush: it is replayed, not processed anew. */
    boolean isReplay(long offset) {
        return offset < replayNext;
    }

    void pin(long offset) {
        pins.merge(offset, 1, Integer::sum);
    }

    void unpin(long offset) {
        pins.computeIfPresent(offset, (k, n) -> n == 1 ? null : n - 1);
    }

    /** Where a rebuild must rewind this partition to: the lowest pin, else the next offset to consume. */
    long heldOffset() {
        long next = writer.targetNext();
        long held = pins.isEmpty() ? next : next == OffsetStore.NO_OFFSET ? pins.firstKey() : Math.min(pins.firstKey(), next);
        return rebuilding && low != OffsetStore.NO_OFFSET ? Math.min(low, held) : held;
    }

    int pinCount() {
        return pins.size();
    }
}
