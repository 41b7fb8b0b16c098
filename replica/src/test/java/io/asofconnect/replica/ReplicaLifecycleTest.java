package io.asofconnect.replica;

import io.asofconnect.replica.ReplicaHealth.State;
import org.junit.jupiter.api.Test;

import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

class ReplicaLifecycleTest {
    private final ReplicaLifecycle lifecycle = new ReplicaLifecycle();
    private final RuntimeException boom = new RuntimeException("boom");

    @Test
    void aReplicaStartsThenStreamsOnceAndRestartsAfterAFailure() {
        assertThat(lifecycle.get().state()).isEqualTo(State.STARTING);
        assertThat(lifecycle.streaming()).as("the first batch").isTrue();
        assertThat(lifecycle.streaming()).as("every later batch: already streaming").isFalse();
        assertThat(lifecycle.get().state()).isEqualTo(State.RUNNING);

        assertThat(lifecycle.restarting("engine failed", boom)).isTrue();
        assertThat(lifecycle.get()).isEqualTo(new ReplicaHealth(State.RESTARTING, "engine failed", Optional.of(boom)));
        assertThat(lifecycle.restarted("restarted after: boom", Optional.of(boom))).isTrue();
        assertThat(lifecycle.get().state()).isEqualTo(State.STARTING);
        assertThat(lifecycle.streaming()).isTrue();
    }

    @Test
    void aGapFailsTheReplicaAndAStreamedBatchOrARestartStillMovesItOn() {
        assertThat(lifecycle.failed("gap", boom)).isTrue();
        assertThat(lifecycle.get().state()).isEqualTo(State.FAILED);
        assertThat(lifecycle.get().healthy()).isFalse();
        assertThat(lifecycle.restarting("engine failed again", boom)).isTrue();
        assertThat(lifecycle.get().state()).isEqualTo(State.RESTARTING);
    }

    @Test
    void nothingLeavesStopped() {
        lifecycle.stop();
        assertThat(lifecycle.stopped()).isTrue();
        assertThat(lifecycle.streaming()).isFalse();
        assertThat(lifecycle.restarting("engine failed after the close", boom)).isFalse();
        assertThat(lifecycle.restarted("restart raced the close", Optional.empty())).isFalse();
        assertThat(lifecycle.failed("gap found by a late restart", boom)).isFalse();
        assertThat(lifecycle.get()).isEqualTo(new ReplicaHealth(State.STOPPED, "stopped", Optional.empty()));
    }
}
