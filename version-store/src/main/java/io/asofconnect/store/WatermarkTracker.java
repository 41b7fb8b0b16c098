package io.asofconnect.store;

import java.time.Duration;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;

/**
 * The replica's watermark as seen by readers: monotonic, published only after the store committed it,
 * and awaitable with a bound. It also keeps the source database's clock as the replica last saw it, since
 * the watermark is a time on that clock and a reader that compares its own "now" with it must use the same one.
 */
public final class WatermarkTracker {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition advanced = lock.newCondition();
    private final LongSupplier localClock;
    private volatile long watermark;
    /** Source clock minus local clock, an upper bound (see {@link #observeSourceClock}); 0 until observed. */
    private volatile long sourceClockAheadMs;
    private volatile LongConsumer wanted = t -> { };

    public WatermarkTracker(long initial) {
        this(initial, System::currentTimeMillis);
    }

    public WatermarkTracker(long initial, LongSupplier localClock) {
        this.watermark = initial;
        this.localClock = localClock;
    }

    /**
     * Records a reading of the source's clock: {@code sourceMillis} was read by a statement sent at local time
     * {@code sentAtLocalMillis}. The server read its clock after the statement left, so {@code sourceMillis -
     * sentAtLocalMillis} is at least the source's lead over the local clock: {@link #sourceNow} is never behind
     * the source, at worst ahead of it by one round trip, which only makes readers wait that much longer.
     */
    public void observeSourceClock(long sourceMillis, long sentAtLocalMillis) {
        sourceClockAheadMs = sourceMillis - sentAtLocalMillis;
    }

    /** Now, in epoch millis on the source database's clock (on the local clock until the first reading). */
    public long sourceNow() {
        return localClock.getAsLong() + sourceClockAheadMs;
    }

    public long get() {
        return watermark;
    }

    /** Raises the watermark to {@code candidate}; a lower candidate is ignored (the watermark never goes back). */
    public void advanceTo(long candidate) {
        if (candidate <= watermark) {
            return;
        }
        lock.lock();
        try {
            if (candidate > watermark) {
                watermark = candidate;
                advanced.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Waits until the watermark is at least {@code timestamp}, at most {@code timeout}. */
    public boolean await(long timestamp, Duration timeout) throws InterruptedException {
        if (watermark >= timestamp) {
            return true;
        }
        long remaining = timeout.toNanos();
        lock.lock();
        try {
            while (watermark < timestamp) {
                if (remaining <= 0) {
                    return false;
                }
                remaining = advanced.awaitNanos(remaining);
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Who is told of a watermark a reader waits for (see {@link #want}); the replica asks its prober for a probe
     * that moves the watermark there.
     */
    public void onWanted(LongConsumer listener) {
        this.wanted = listener;
    }

    /** A reader waits for the watermark to reach {@code timestamp}; passed on only while it has not. */
    public void want(long timestamp) {
        if (timestamp > watermark) {
            wanted.accept(timestamp);
        }
    }

    /** Wakes every waiter, e.g. when the replica stops, so none waits out its full bound for nothing. */
    public void wakeAll() {
        lock.lock();
        try {
            advanced.signalAll();
        } finally {
            lock.unlock();
        }
    }

}
