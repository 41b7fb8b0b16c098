package io.asofconnect.store;

import java.nio.file.Path;
import java.util.Optional;

/**
 * What opening a store file found. A {@link Kind#REBUILT} store is empty: the damaged file was moved
 * aside to {@code quarantined} and the replica must take a new snapshot.
 */
public record OpenOutcome(Kind kind, String reason, Optional<Path> quarantined) {
    public enum Kind { CREATED, REOPENED, REBUILT }

    public static OpenOutcome created() {
        return new OpenOutcome(Kind.CREATED, "no store file yet", Optional.empty());
    }

    public static OpenOutcome reopened() {
        return new OpenOutcome(Kind.REOPENED, "reopened", Optional.empty());
    }

    public static OpenOutcome rebuilt(String reason, Path quarantined) {
        return new OpenOutcome(Kind.REBUILT, reason, Optional.of(quarantined));
    }
}
