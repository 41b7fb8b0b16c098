package io.asofconnect.replica.store;

import java.time.Duration;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The replica's watermark as seen by readers: monotonic, published only after the store committed it,
 * and awaitable with a bound.
 */
public final class WatermarkTracker {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition advanced = lock.newCondition();
    private volatile long watermark;

    public WatermarkTracker(long initial) {
        this.watermark = initial;
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
