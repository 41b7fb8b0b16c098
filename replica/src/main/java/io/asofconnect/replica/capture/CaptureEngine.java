package io.asofconnect.replica.capture;

import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.debezium.embedded.Connect;
import org.apache.kafka.connect.source.SourceRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * One run of the embedded Debezium engine on its own thread. Inside a Connect worker our classes live in a
 * plugin class loader while Debezium loads the connector, converters and our offset store by name, so the
 * engine is built and run with that loader as the thread's context class loader.
 */
public final class CaptureEngine implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CaptureEngine.class);

    private final String name;
    private final Supplier<String> who;
    private final DebeziumEngine<RecordChangeEvent<SourceRecord>> engine;
    private final Thread thread;
    private final CountDownLatch finished = new CountDownLatch(1);
    private volatile boolean closing;

    /**
     * @param onFailure called once, on the engine thread, if the engine stops with an error while not being
     *                  closed
     * @param who       how problem lines name the replica and the tasks using it
     */
    public CaptureEngine(String name, Supplier<String> who, Properties props,
                         DebeziumEngine.ChangeConsumer<RecordChangeEvent<SourceRecord>> consumer, Consumer<Throwable> onFailure) {
        this.name = name;
        this.who = who;
        ClassLoader ours = CaptureEngine.class.getClassLoader();
        this.engine = withContextLoader(ours, () -> DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
                .using(props)
                .using(ours)
                .notifying(consumer)
                .using((DebeziumEngine.CompletionCallback) (success, message, error) -> {
                    if (!success && !closing) {
                        Throwable cause = error != null ? error : new IllegalStateException(message);
                        LOG.warn("{}: capture engine stopped: {}", who.get(), message);
                        onFailure.accept(cause);
                    }
                })
                .build());
        this.thread = new Thread(() -> {
            try {
                withContextLoader(ours, () -> {
                    engine.run();
                    return null;
                });
            } finally {
                finished.countDown();
            }
        }, "asof-replica-engine-" + name);
        thread.setDaemon(true);
    }

    public void start() {
        thread.start();
        LOG.info("Capture engine of replica {} started", name);
    }

    /** Whether the engine thread ended. */
    public boolean isFinished() {
        return finished.getCount() == 0;
    }

    @Override
    public void close() {
        closing = true;
        // The engine refuses to stop while its tasks are still starting; ask again until it accepts, bounded.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                engine.close();
                break;
            } catch (IOException e) {
                LOG.warn("{}: closing the capture engine failed; if the slot stays active, restart the worker", who.get(), e);
                break;
            } catch (IllegalStateException e) {
                if (isFinished()) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    LOG.warn("{}: the capture engine could not be stopped ({}); if the slot stays active, restart the worker", who.get(), e.getMessage());
                    break;
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        try {
            if (thread.isAlive() && !finished.await(60, TimeUnit.SECONDS)) {
                LOG.warn("{}: the capture engine did not stop within 60 s; interrupting it. If this recurs, look for a slow source"
                        + " query in pg_stat_activity", who.get());
                thread.interrupt();
                finished.await(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        LOG.info("Capture engine of replica {} stopped", name);
    }

    private interface Action<T> {
        T run();
    }

    private static <T> T withContextLoader(ClassLoader loader, Action<T> action) {
        Thread t = Thread.currentThread();
        ClassLoader previous = t.getContextClassLoader();
        t.setContextClassLoader(loader);
        try {
            return action.run();
        } finally {
            t.setContextClassLoader(previous);
        }
    }
}
