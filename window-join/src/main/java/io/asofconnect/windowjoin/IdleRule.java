package io.asofconnect.windowjoin;

import io.asofconnect.windowjoin.state.Side;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The idle rule: a partition without records for {@code join.idle.timeout.ms} takes its watermark from the least
 * greatest event time of the active partitions, or, with none active, from the greatest event time the task has
 * seen plus the wall-clock time since, beyond the timeout. Not from the wall clock alone: a paused backfill of old
 * events must not jump to today. Its effect is committed with the watermark, so a rebuild never changes it; it is
 * the one thing in the join's output that depends on when the input paused.
 */
final class IdleRule {
    private final long idleNanos;
    private final JoinWindow window;
    private long taskMaxTime = Long.MIN_VALUE;
    private long taskMaxSeenNanos;

    IdleRule(long idleTimeoutMs, JoinWindow window) {
        this.idleNanos = TimeUnit.MILLISECONDS.toNanos(idleTimeoutMs);
        this.window = window;
    }

    /** A record with event time {@code time} arrived at {@code now}. */
    void seen(long time, long now) {
        if (time > taskMaxTime) {
            taskMaxTime = time;
            taskMaxSeenNanos = now;
        }
    }

    private boolean idle(SideState s, long now) {
        return now - s.lastRecordNanos >= idleNanos;
    }

    /** Raises the watermark of every idle partition of a live pair, marking it to be committed. */
    void advance(Collection<SideState> sides, Collection<PairState> pairs, long now) {
        long clock = Long.MAX_VALUE;
        boolean anyActive = false;
        for (SideState s : sides) {
            if (!idle(s, now) && s.maxTime != Long.MIN_VALUE) {
                anyActive = true;
                clock = Math.min(clock, s.maxTime);
            }
        }
        if (!anyActive) {
            if (taskMaxTime == Long.MIN_VALUE || now - taskMaxSeenNanos < idleNanos) {
                return;
            }
            clock = JoinWindow.plus(taskMaxTime, TimeUnit.NANOSECONDS.toMillis(now - taskMaxSeenNanos - idleNanos));
        }
        long w = window.watermarkAfter(clock);
        for (PairState pair : pairs) {
            if (!pair.live()) {
                continue;
            }
            for (Side side : Side.values()) {
                SideState s = pair.side(side);
                if (idle(s, now) && w > s.watermark) {
                    s.watermark = w;
                    s.writer.markChanged();
                }
            }
        }
    }

    /**
     * A replaying partition that receives nothing for the idle timeout has nothing left to replay (its last records
     * were skipped, or the log ends in transaction markers): it runs live. Returns the partitions that did.
     */
    List<SideState> endIdleReplays(PairState pair, long now) {
        List<SideState> ended = new ArrayList<>();
        for (Side side : Side.values()) {
            SideState s = pair.side(side);
            if (!s.caughtUp && idle(s, now)) {
                s.caughtUp = true;
                s.expectFirst = -1;
                ended.add(s);
            }
        }
        return ended;
    }
}
