package io.asofconnect.common.testing;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;

/**
 * A wait on a thread of its own, whose parks are then the wait's own (a pool thread also parks while idle), so
 * that the test can see the wait parked rather than guess with a sleep. Shared through common's test-jar: the
 * watermark's tests (replica) and the engine's tests (enrich) both watch a reader wait on a condition.
 */
public final class Waiter<T> {
    public final CompletableFuture<T> result = new CompletableFuture<>();
    private final Thread thread;

    public Waiter(Callable<T> wait) {
        thread = new Thread(() -> {
            try {
                result.complete(wait.call());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        }, "waiter");
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * Returns once the waiter is parked in a timed condition wait that began after its {@code parksBefore}-th park
     * (its park count then), or once it has finished (-1). Given the count of a park seen before an action, a
     * later park began after the waiter was woken by that action and had checked what it waits for: it waits on.
     * (A spurious wakeup just before the action could only make the check weaker, never fail a right wait.)
     */
    public long parkedAfter(long parksBefore) throws Exception {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!result.isDone()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the waiter did not park within 30 s: " + threads.getThreadInfo(thread.getId()));
            }
            ThreadInfo info = threads.getThreadInfo(thread.getId());
            if (info != null && info.getThreadState() == Thread.State.TIMED_WAITING && info.getWaitedCount() > parksBefore
                    && info.getLockInfo() != null
                    && Condition.class.isAssignableFrom(Class.forName(info.getLockInfo().getClassName()))) {
                return info.getWaitedCount();
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        return -1;
    }
}
