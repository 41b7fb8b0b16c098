package io.asofconnect.it.harness;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * Prints the tail of every broker, worker and database log started by this JVM when a test or its set-up
 * fails: the reason is usually in a worker's log, not in the assertion message.
 */
public final class PrintLogsOnFailure implements TestExecutionExceptionHandler, LifecycleMethodExecutionExceptionHandler {

    private static final int LINES = 80;

    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable throwable) throws Throwable {
        print(context, throwable);
        throw throwable;
    }

    @Override
    public void handleBeforeAllMethodExecutionException(ExtensionContext context, Throwable throwable) throws Throwable {
        print(context, throwable);
        throw throwable;
    }

    @Override
    public void handleBeforeEachMethodExecutionException(ExtensionContext context, Throwable throwable) throws Throwable {
        print(context, throwable);
        throw throwable;
    }

    private static void print(ExtensionContext context, Throwable throwable) {
        System.out.println("===== " + context.getDisplayName() + " failed: " + throwable + " =====");
        ManagedProcess.printTails(System.out, LINES);
    }
}
