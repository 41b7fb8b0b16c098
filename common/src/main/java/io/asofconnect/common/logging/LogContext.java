package io.asofconnect.common.logging;

import org.slf4j.MDC;

/**
 * Names the connector and task a log line speaks for, from the context Connect keeps in the logging MDC of
 * every connector and task thread (KIP-449: key {@code connector.context}, {@code "[name|task-0] "} or
 * {@code "[name|worker] "}). Problem lines carry this name in their text as well, because a worker's layout
 * need not print the MDC (the default one does), and because a replica's own threads serve several tasks
 * and have no MDC at all: they name the tasks that use them instead.
 */
public final class LogContext {
    /** Connect's MDC key ({@code org.apache.kafka.connect.util.LoggingContext#CONNECTOR_CONTEXT}). */
    static final String MDC_KEY = "connector.context";

    private LogContext() {
    }

    /**
     * "connector NAME task N" on a task thread, "connector NAME" on a connector's thread; on any other thread
     * (a REST request validating a config, a test) "connector " + {@code fallbackConnector}, or null when that
     * is null too.
     */
    public static String current(String fallbackConnector) {
        String described = describe(MDC.get(MDC_KEY));
        if (described != null) {
            return described;
        }
        return fallbackConnector == null ? null : "connector " + fallbackConnector;
    }

    /** {@link #current(String)} without a fallback: null off Connect's threads. */
    public static String current() {
        return current(null);
    }

    /** Parses Connect's context value; null when it is absent or not in Connect's form. */
    static String describe(String context) {
        if (context == null) {
            return null;
        }
        String c = context.strip();
        int bar = c.lastIndexOf('|');
        if (!c.startsWith("[") || !c.endsWith("]") || bar < 2) {
            return null;
        }
        String connector = c.substring(1, bar);
        String scope = c.substring(bar + 1, c.length() - 1);
        int dash = scope.lastIndexOf('-');
        if (dash > 0 && scope.substring(dash + 1).chars().allMatch(Character::isDigit) && dash < scope.length() - 1) {
            String kind = scope.substring(0, dash);
            String task = "connector " + connector + " task " + scope.substring(dash + 1);
            return kind.equals("task") ? task : task + " (" + kind + ")";
        }
        return "connector " + connector;
    }
}
