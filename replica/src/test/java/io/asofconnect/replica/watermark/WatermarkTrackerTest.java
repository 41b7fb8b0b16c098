package io.asofconnect.replica.watermark;

import io.asofconnect.common.testing.Waiter;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

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
}
