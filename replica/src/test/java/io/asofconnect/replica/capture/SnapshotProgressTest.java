package io.asofconnect.replica.capture;

import static org.assertj.core.api.Assertions.assertThat;

import io.asofconnect.replica.capture.ReplicaStats;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicLong;

class SnapshotProgressTest {
    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final ReplicaStats stats = new ReplicaStats();
    private final SnapshotProgress progress = new SnapshotProgress("users", stats, clock::get);

    private String storeAt(long elapsedMs, long rows) {
        clock.set(1_000_000 + elapsedMs);
        stats.committed(rows, 0);
        return progress.stored();
    }

    @Test
    void aLongSnapshotReportsRowsPercentRateAndTimeLeftOncePerInterval() {
        stats.snapshotRowsEstimated(100_000);
        assertThat(storeAt(0, 1_000)).as("the first batch only starts the clock").isNull();
        assertThat(storeAt(5_000, 9_000)).as("within the first interval").isNull();
        // 20,000 rows 10 s in, 19,000 of them since the first batch: 1,900 rows/s, 80,000 left: about 42 s.
        assertThat(storeAt(10_000, 10_000)).isEqualTo(
                "Replica users: initial snapshot 20000 of about 100000 rows (20%), 1900 rows/s, about 42 s left");
        assertThat(storeAt(15_000, 5_000)).as("the pace is one line per interval").isNull();
        assertThat(storeAt(20_000, 5_000)).startsWith("Replica users: initial snapshot 30000 of about 100000 rows (30%)");
    }

    @Test
    void anEstimateBelowTheRowsSoFarSaysSoInsteadOfAPercent() {
        stats.snapshotRowsEstimated(500);
        storeAt(0, 1_000);
        assertThat(storeAt(10_000, 1_000)).isEqualTo("Replica users: initial snapshot 2000 rows, 100 rows/s"
                + " (the table statistics estimate 500 rows; run ANALYZE for a better one)");
    }

    @Test
    void aSnapshotShorterThanOneIntervalIsSilent() {
        stats.snapshotRowsEstimated(100);
        assertThat(storeAt(0, 50)).isNull();
        assertThat(storeAt(9_999, 50)).isNull();
    }
}
