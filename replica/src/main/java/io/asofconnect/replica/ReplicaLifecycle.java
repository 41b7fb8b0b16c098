package io.asofconnect.replica;

import io.asofconnect.replica.ReplicaHealth.State;

import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The replica's state and every transition between its states, in one place (as Debezium's
 * {@code AsyncEmbeddedEngine} keeps its own). The transitions:
 * <pre>
 *   STARTING   --first batch streamed-------------------------> RUNNING
 *   RESTARTING --first batch streamed-------------------------> RUNNING
 *   any but STOPPED --engine failed, or a lookup found damage--> RESTARTING
 *   any but STOPPED --restart done, engine started-------------> STARTING
 *   any but STOPPED --restart found a gap it cannot heal-------> FAILED
 *   any        --closed by its last user----------------------> STOPPED (final)
 * </pre>
 * A transition not in the table is refused and changes nothing, so that, above all, nothing leaves STOPPED: an
 * engine failure or a restart racing the last user's close cannot bring a closed replica back to life.
 */
final class ReplicaLifecycle {
    private static final Set<State> LIVE = EnumSet.complementOf(EnumSet.of(State.STOPPED));
    private static final Set<State> NOT_STREAMING = EnumSet.of(State.STARTING, State.RESTARTING, State.FAILED);

    private final AtomicReference<ReplicaHealth> current =
            new AtomicReference<>(new ReplicaHealth(State.STARTING, "starting", Optional.empty()));

    ReplicaHealth get() {
        return current.get();
    }

    boolean stopped() {
        return current.get().state() == State.STOPPED;
    }

    /** The engine handed over a batch. @return whether the replica only now counts as streaming */
    boolean streaming() {
        return move(NOT_STREAMING, new ReplicaHealth(State.RUNNING, "streaming", Optional.empty()));
    }

    /** The engine failed, or a lookup found the store damaged: a restart is on its way. */
    boolean restarting(String detail, Throwable cause) {
        return move(LIVE, new ReplicaHealth(State.RESTARTING, detail, Optional.of(cause)));
    }

    /** A restart started a new engine; {@code previous} is what it restarted after, if known. */
    boolean restarted(String detail, Optional<Throwable> previous) {
        return move(LIVE, new ReplicaHealth(State.STARTING, detail, previous));
    }

    /** A restart found what no restart can fix: lookups keep the stored history, capture stays stopped. */
    boolean failed(String detail, Throwable cause) {
        return move(LIVE, new ReplicaHealth(State.FAILED, detail, Optional.of(cause)));
    }

    /** Closed by its last user; final. */
    void stop() {
        current.set(new ReplicaHealth(State.STOPPED, "stopped", Optional.empty()));
    }

    private boolean move(Set<State> from, ReplicaHealth to) {
        for (ReplicaHealth now = current.get(); from.contains(now.state()); now = current.get()) {
            if (current.compareAndSet(now, to)) {
                return true;
            }
        }
        return false;
    }
}
