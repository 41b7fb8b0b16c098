package io.asofconnect.replica.watermark;

import io.asofconnect.common.lookup.Watermark;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;

/**
 * The replica's watermark as seen by readers: monotonic, published only after the store committed it,
 * and awaitable with a bound. It also keeps the source database's clock as the replica last saw it, since
 * the watermark is a time on that clock and a reader that compares its own "now" with it must use the same one.
 *
 * <p>Beside the watermark it keeps the <em>receipt watermark</em> ({@link #receiptWatermark}), the bound of
 * read-your-writes: every change committed before a record was received at a {@link #sourceNow} reading at or
 * below it has been applied. The watermark is one such bound (a change committed before the receipt was committed
 * before the probe that raised the watermark past it read its clock), but it trails the present by the safety
 * margin, which only commit times need. A probe that was <em>sent</em> after a reading of {@link #sourceNow} was
 * taken is written to the WAL after every commit that had completed by then, so once it has come through the slot
 * and been applied, every change committed before that reading has been applied, with no margin: the probe carries
 * its own sending reading, a "token" ({@link #advanceReceiptsTo}). This rests on {@link #sourceNow} never going
 * back, so tokens and receipts of one tracker compare as their real times do; a probe sent by another tracker (an
 * earlier process of the replica) carries another {@link #instance} and counts only for the watermark.
 */
public final class WatermarkTracker implements Watermark {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition advanced = lock.newCondition();
    private final LongSupplier localClock;
    private volatile long watermark;
    /** Receipts at or below this are covered by an applied probe sent after them; see {@link #receiptWatermark}. */
    private volatile long receipts = Long.MIN_VALUE;
    /** Source clock minus local clock, an upper bound (see {@link #observeSourceClock}); 0 until observed. */
    private volatile long sourceClockAheadMs;
    /** The greatest {@link #sourceNow} handed out: it never goes back, even when a new reading lowers the lead. */
    private final AtomicLong lastSourceNow = new AtomicLong(Long.MIN_VALUE);
    /** Tells this tracker's probe tokens from those of another (an earlier process's probes replayed from the slot). */
    private final long instance = ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE;
    private volatile LongConsumer wanted = t -> { };
    private volatile Runnable receiptWanted = () -> { };

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

    /**
     * Now, in epoch millis on the source database's clock (on the local clock until the first reading); never less
     * than an earlier call returned, so that a probe token taken after a receipt is never below it.
     */
    public long sourceNow() {
        return lastSourceNow.accumulateAndGet(sourceReading(), Math::max);
    }

    /** The local clock plus the source's measured lead, before the never-back rule of {@link #sourceNow}. */
    private long sourceReading() {
        return localClock.getAsLong() + sourceClockAheadMs;
    }

    /**
     * The token of a probe about to be sent: a {@link #sourceNow} reading strictly above every reading handed out
     * before it, so that every receipt taken before the probe is below its token and covered by it
     * ({@link #advanceReceiptsTo}). It moves the clock on by a millisecond only when two readings fall in one.
     */
    public long probeToken() {
        return lastSourceNow.accumulateAndGet(sourceReading(), (last, reading) -> Math.max(last + 1, reading));
    }

    public long get() {
        return watermark;
    }

    /** What a probe of this tracker carries besides its token, so that only its own probes' tokens count. */
    public long instance() {
        return instance;
    }

    /**
     * The read-your-writes bound: every change committed before a record was received at a {@link #sourceNow}
     * reading at or below this has been applied. At least the {@linkplain #get() watermark}.
     */
    public long receiptWatermark() {
        return Math.max(watermark, receipts);
    }

    /**
     * Raises the receipt watermark after the store committed what came before a probe of this tracker whose token
     * ({@link #probeToken}, taken just before it was sent) is {@code token}: receipts below it were taken before the
     * probe was sent, and every receipt taken before it is below it. Lower values, and {@link Long#MIN_VALUE} (no probe), are ignored.
     */
    public void advanceReceiptsTo(long token) {
        if (!wouldRaiseReceipts(token)) {
            return;
        }
        lock.lock();
        try {
            if (wouldRaiseReceipts(token)) {
                receipts = token - 1;
                advanced.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Whether {@link #advanceReceiptsTo}{@code (token)} would raise the receipt watermark. */
    public boolean wouldRaiseReceipts(long token) {
        return token != Long.MIN_VALUE && token - 1 > receiptWatermark();
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
        return await(timestamp, timeout, false);
    }

    /** Waits until the {@linkplain #receiptWatermark() receipt watermark} is at least {@code receipt}, at most {@code timeout}. */
    public boolean awaitReceipts(long receipt, Duration timeout) throws InterruptedException {
        return await(receipt, timeout, true);
    }

    private long bound(boolean receipt) {
        return receipt ? receiptWatermark() : watermark;
    }

    private boolean await(long timestamp, Duration timeout, boolean receipt) throws InterruptedException {
        if (bound(receipt) >= timestamp) {
            return true;
        }
        long remaining = timeout.toNanos();
        lock.lock();
        try {
            while (bound(receipt) < timestamp) {
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

    /** Who is told that a reader waits for the receipt watermark (see {@link #wantReceipts}): the replica probes soon. */
    public void onReceiptWanted(Runnable listener) {
        this.receiptWanted = listener;
    }

    /**
     * A reader holds a record received at {@code receipt} until the receipt watermark reaches it; passed on only
     * while it has not. Any probe sent from now on covers it.
     */
    public void wantReceipts(long receipt) {
        if (receipt > receiptWatermark()) {
            receiptWanted.run();
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
