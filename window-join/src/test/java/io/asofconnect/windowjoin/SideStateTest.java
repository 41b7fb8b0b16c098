package io.asofconnect.windowjoin;

import io.asofconnect.windowjoin.state.Side;
import io.asofconnect.writer.PartitionState;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** The held offset a flush commits: the lowest pin, and never above where a rebuild still in progress started. */
class SideStateTest {
    private static SideState rebuiltFrom(long low, long committedNext) {
        return new SideState(Side.LEFT, new PartitionState(new TopicPartition("queries", 0), 3, committedNext), low, 100L, Set.of(), 0L);
    }

    @Test
    void aCommitDuringARebuildKeepsTheHeldOffsetItStartedFrom() {
        SideState s = rebuiltFrom(5, 10);
        s.rebuilding = true;
        assertThat(s.caughtUp).isFalse();
        assertThat(s.heldOffset()).as("nothing replayed yet: the records from 5 are still held").isEqualTo(5);
        s.pin(7);
        assertThat(s.heldOffset()).as("only part of the slice replayed").isEqualTo(5);
    }

    @Test
    void onceLiveTheLowestPinDecides() {
        SideState s = rebuiltFrom(5, 10);
        s.pin(7);
        s.pin(8);
        assertThat(s.heldOffset()).isEqualTo(7);
        s.unpin(7);
        assertThat(s.heldOffset()).isEqualTo(8);
        s.unpin(8);
        assertThat(s.heldOffset()).as("nothing held: the next offset to consume").isEqualTo(10);
    }
}
