package io.asofconnect.replica.watermark;

import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The two bounds readers wait for: the watermark (commit times) and the receipt watermark (read-your-writes),
 * and the clock both are compared with.
 */
class WatermarkTrackerTest {
    private final AtomicLong local = new AtomicLong(1_000);
    private final WatermarkTracker tracker = new WatermarkTracker(100, local::get);

    @Test
    void theSourceClockNeverGoesBackWhenANewReadingLowersTheLead() {
        tracker.observeSourceClock(1_050, 1_000);
        assertThat(tracker.sourceNow()).isEqualTo(1_050);
        // A faster round trip measures a smaller lead: a receipt taken before must not look later than a token after.
        tracker.observeSourceClock(1_010, 1_000);
        assertThat(tracker.sourceNow()).isEqualTo(1_050);
        local.set(1_100);
        assertThat(tracker.sourceNow()).isEqualTo(1_110);
    }

    @Test
    void aProbeTokenIsAboveEveryReceiptTakenBeforeItEvenInTheSameMillisecond() {
        long receipt = tracker.sourceNow();
        long token = tracker.probeToken();
        assertThat(token).isGreaterThan(receipt);
        assertThat(tracker.sourceNow()).as("a receipt after the token is not below it").isGreaterThanOrEqualTo(token);
        tracker.advanceReceiptsTo(token);
        assertThat(tracker.receiptWatermark()).isGreaterThanOrEqualTo(receipt);
    }

    @Test
    void aProbeTokenCoversTheReceiptsTakenBeforeItAndTheWatermarkCoversItsOwn() {
        assertThat(tracker.receiptWatermark()).isEqualTo(100);
        tracker.advanceReceiptsTo(Long.MIN_VALUE);
        assertThat(tracker.receiptWatermark()).as("no probe came through").isEqualTo(100);
        tracker.advanceReceiptsTo(200);
        // A receipt equal to the token may have been read just after it: only those below are covered.
        assertThat(tracker.receiptWatermark()).isEqualTo(199);
        assertThat(tracker.get()).as("the watermark itself does not move").isEqualTo(100);
        tracker.advanceReceiptsTo(150);
        assertThat(tracker.receiptWatermark()).as("never back").isEqualTo(199);
        tracker.advanceTo(300);
        assertThat(tracker.receiptWatermark()).as("the watermark is a receipt bound too").isEqualTo(300);
    }

    @Test
    void onlyAReceiptPastTheReceiptWatermarkAsksForAProbe() {
        AtomicInteger asked = new AtomicInteger();
        tracker.onReceiptWanted(asked::incrementAndGet);
        tracker.advanceReceiptsTo(200);
        tracker.wantReceipts(199);
        assertThat(asked).hasValue(0);
        tracker.wantReceipts(200);
        assertThat(asked).hasValue(1);
    }

    @Test
    void aReaderWaitingForAReceiptWakesWhenAProbeTokenCoversIt() throws Exception {
        Waiter<Boolean> waiter = new Waiter<>(() -> tracker.awaitReceipts(500, Duration.ofSeconds(20)));
        long parks = waiter.parkedAfter(0);
        tracker.advanceReceiptsTo(500);
        // The advance woke the reader; once it has parked again it has looked at the new bound and waits on.
        waiter.parkedAfter(parks);
        assertThat(waiter.result).as("500 is not below the token").isNotDone();
        tracker.advanceReceiptsTo(501);
        assertThat(waiter.result.get(20, TimeUnit.SECONDS)).isTrue();
        assertThat(tracker.await(500, Duration.ZERO)).as("the watermark has not passed it").isFalse();
    }

    /**
     * A wait on a thread of its own, whose parks are then the wait's own (a pool thread also parks while idle), so
     * that the test can see the wait parked rather than guess with a sleep.
     */
    static final class Waiter<T> {
        final CompletableFuture<T> result = new CompletableFuture<>();
        private final Thread thread;

        Waiter(Callable<T> wait) {
            thread = new Thread(() -> {
                try {
                    result.complete(wait.call());
                } catch (Throwable e) {
                    result.completeExceptionally(e);
                }
            }, "waiter");
            thread.setDaemon(true);
            thread.start();
        }

        /**
         * Returns once the waiter is parked in a timed condition wait that began after its {@code parksBefore}-th park
         * (its park count then), or once it has finished (-1). Given the count of a park seen before an action, a
         * later park began after the waiter was woken by that action and had checked what it waits for: it waits on.
         * (A spurious wakeup just before the action could only make the check weaker, never fail a right wait.)
         */
        long parkedAfter(long parksBefore) throws Exception {
            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!result.isDone()) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("the waiter did not park within 30 s: " + threads.getThreadInfo(thread.getId()));
                }
                ThreadInfo info = threads.getThreadInfo(thread.getId());
                if (info != null && info.getThreadState() == Thread.State.TIMED_WAITING && info.getWaitedCount() > parksBefore
                        && info.getLockInfo() != null
                        && Condition.class.isAssignableFrom(Class.forName(info.getLockInfo().getClassName()))) {
                    return info.getWaitedCount();
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
            }
            return -1;
        }
    }
}
