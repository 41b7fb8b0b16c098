package io.asofconnect.tablejoin;

import io.asofconnect.replica.config.ReplicaConfig;

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Everything that must hold before a view starts, by the option to fix: the encoding fits the view, the columns and
 * key describe the join, both tables are captured by the replica with commit-time versions, and the key determines
 * both tables' primary keys (read from the source database). Run by {@code validate} and again by {@code start}.
 */
final class ViewChecks {
    private ViewChecks() {
    }

    /** Problems by config key, in the order found; empty when the view can start. */
    static Map<String, List<String>> problems(TableJoinConfig config, ReplicaConfig replica) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        ViewDefinition view = config.view();
        view.encodingProblem().ifPresent(p -> add(out, TableJoinConfig.ENCODING, p));
        for (String p : view.shapeProblems()) {
            add(out, p.startsWith("view.key") ? TableJoinConfig.KEY : TableJoinConfig.COLUMNS, p);
        }
        for (ViewSide side : List.of(view.left(), view.right())) {
            if (replica.tables().stream().noneMatch(t -> t.equals(side.table()))) {
                boolean otherCase = replica.tables().stream().anyMatch(t -> t.equalsIgnoreCase(side.table()));
                add(out, ReplicaConfig.TABLES, otherCase
                        ? side.table() + " is spelled differently in replica.tables " + replica.tables() + "; the replica names"
                        + " tables as written there, so write the view's tables the same way"
                        : side.table() + " is a table of the view but not in replica.tables " + replica.tables() + "; add it");
            }
        }
        if (replica.validFrom() != ReplicaConfig.ValidFrom.COMMIT_TIME) {
            add(out, ReplicaConfig.VALID_FROM, "a view follows the source's commit order, so its replica must version rows by"
                    + " commit time; set replica.valid.from=COMMIT_TIME (or leave it unset)");
        }
        if (out.isEmpty()) {
            try {
                List<String> leftKey = SourceKeys.of(replica, view.left().table());
                List<String> rightKey = SourceKeys.of(replica, view.right().table());
                if (leftKey.isEmpty() || rightKey.isEmpty()) {
                    add(out, TableJoinConfig.KEY, (leftKey.isEmpty() ? view.left() : view.right()).table()
                            + " has no primary key; give it one, or name its key columns in replica.key.columns");
                } else {
                    view.keyProblems(leftKey, rightKey).forEach(p -> add(out, TableJoinConfig.KEY, p));
                }
            } catch (SQLException e) {
                add(out, ReplicaConfig.HOSTNAME, "cannot read the primary keys of the view's tables from the source database ("
                        + e.getMessage() + "); check the replica.database.* settings and that the database is reachable");
            }
        }
        return out;
    }

    private static void add(Map<String, List<String>> out, String key, String problem) {
        out.computeIfAbsent(key, k -> new ArrayList<>()).add(problem);
    }
}
