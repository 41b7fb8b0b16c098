package io.asofconnect.it;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import io.asofconnect.it.harness.JsonEvents;

/** Keeps events flowing while a test kills, stops or pauses workers; the only user of its scenario meanwhile. */
final class BackgroundProducer implements AutoCloseable {

    private final AtomicBoolean running = new AtomicBoolean(true);
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final Thread thread;

    BackgroundProducer(PageViews scenario, JsonEvents producer, int chunk) {
        thread = new Thread(() -> {
            try {
                while (running.get()) {
                    scenario.produceEvents(producer, chunk);
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        }, "background-producer");
        thread.setDaemon(true);
        thread.start();
    }

    /** Stops after the current chunk; rethrows what went wrong in the producer thread. */
    @Override
    public void close() throws InterruptedException {
        running.set(false);
        thread.join(Duration.ofSeconds(60).toMillis());
        if (thread.isAlive()) {
            throw new IllegalStateException("background producer did not stop within 60 s");
        }
        if (failure.get() != null) {
            throw new IllegalStateException("background producer failed", failure.get());
        }
    }
}
