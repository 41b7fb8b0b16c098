package io.asofconnect.replica;

import io.asofconnect.replica.capture.BatchApplier;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class PruneIntervalTest {
    @Test
    void pruneRunsAtMostEveryMaxOfAMinuteAndATenthOfRetention() {
        assertThat(BatchApplier.pruneInterval(7L * 24 * 3600 * 1000)).isEqualTo(7L * 24 * 3600 * 100);
        assertThat(BatchApplier.pruneInterval(3_600_000)).isEqualTo(360_000);
        assertThat(BatchApplier.pruneInterval(300_000)).isEqualTo(60_000);
        // Shorter retentions (tests, demos) prune once per retention, never more than once a second.
        assertThat(BatchApplier.pruneInterval(1500)).isEqualTo(1500);
        assertThat(BatchApplier.pruneInterval(0)).isEqualTo(1000);
    }
}
