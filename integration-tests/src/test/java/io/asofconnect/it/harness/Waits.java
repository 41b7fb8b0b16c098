package io.asofconnect.it.harness;

import java.time.Duration;
import java.time.Instant;
import java.util.function.BooleanSupplier;

/** Bounded waiting for harness code that runs outside Awaitility (e.g. process start-up). */
public final class Waits {

    private Waits() {
    }

    /** One step of a loop that is bounded by its own deadline. */
    public static void pause(Duration step) {
        try {
            Thread.sleep(step.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while waiting", e);
        }
    }

    public static void until(BooleanSupplier condition, Duration timeout, String what) {
        Instant deadline = Instant.now().plus(timeout);
        while (!condition.getAsBoolean()) {
            if (Instant.now().isAfter(deadline)) {
                throw new IllegalStateException("Timed out after " + timeout + " waiting for " + what);
            }
            pause(Duration.ofMillis(200));
        }
    }
}
