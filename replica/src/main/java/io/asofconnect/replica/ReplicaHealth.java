package io.asofconnect.replica;

import java.util.Optional;

/**
 * What a replica is doing, for a connector's status: {@code failure} is the error that stopped the
 * capture engine (its message says what to do), present when {@code state} is FAILED or RESTARTING.
 */
public record ReplicaHealth(State state, String detail, Optional<Throwable> failure) {
    public enum State {
        /** Start-up checks passed and the engine is starting or taking its snapshot. */
        STARTING,
        /** The engine streams changes. */
        RUNNING,
        /** The engine stopped with an error and is being restarted after a back-off. */
        RESTARTING,
        /** The engine stopped with an error that a restart cannot fix (e.g. a gap); lookups keep the stored history. */
        FAILED,
        /** Closed by its last user. */
        STOPPED
    }

    public boolean healthy() {
        return state == State.STARTING || state == State.RUNNING;
    }
}
