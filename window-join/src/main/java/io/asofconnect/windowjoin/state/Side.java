package io.asofconnect.windowjoin.state;

/** Which input of the join a record came from. */
public enum Side {
    LEFT, RIGHT;

    public Side other() {
        return this == LEFT ? RIGHT : LEFT;
    }
}
