package io.asofconnect.replica;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The connectors and tasks holding a handle on one replica, as {@link io.asofconnect.common.logging.LogContext} named
 * them when they acquired it. The replica's own threads serve all of them and have no Connect logging context,
 * so its problem lines name these instead: an operator reading the line knows which connectors it concerns.
 */
final class ReplicaUsers {
    /** Outside Connect (a test, an embedding application) a user has no connector to name. */
    static final String UNNAMED = "a caller outside Connect";

    /** User to its number of open handles; insertion order, so lines list tasks in the order they started. */
    private final Map<String, Integer> handles = new LinkedHashMap<>();

    synchronized void add(String user) {
        handles.merge(label(user), 1, Integer::sum);
    }

    synchronized void remove(String user) {
        handles.computeIfPresent(label(user), (k, n) -> n > 1 ? n - 1 : null);
    }

    private static String label(String user) {
        return user == null ? UNNAMED : user;
    }

    /** "used by connector a task 0, connector a task 1", or "no task uses it now". */
    @Override
    public synchronized String toString() {
        if (handles.isEmpty()) {
            return "no task uses it now";
        }
        List<String> users = new ArrayList<>(handles.keySet());
        return "used by " + String.join(", ", users);
    }
}
