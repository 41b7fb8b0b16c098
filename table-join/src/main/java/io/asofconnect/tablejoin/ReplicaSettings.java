package io.asofconnect.tablejoin;

import io.asofconnect.common.lookup.IndexDeclaration;
import io.asofconnect.replica.config.ReplicaConfig;

import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The replica options a view needs beyond what the user wrote: an index on each side's join columns and both tables
 * in the change feed. Derived from the view so the user never writes them; added to any the user gave, which are read
 * as the replica reads them.
 */
final class ReplicaSettings {
    private ReplicaSettings() {
    }

    static Map<String, String> forView(Map<String, String> props, ViewDefinition view) {
        Map<String, String> out = new HashMap<>(props);
        String given = props.get(ReplicaConfig.INDEXES);
        Set<IndexDeclaration> indexes = new LinkedHashSet<>(given == null || given.isBlank() ? List.of()
                : ReplicaConfig.parseIndexes(ReplicaConfig.INDEXES, List.of(given)));
        indexes.add(view.left().index());
        indexes.add(view.right().index());
        Set<String> feed = new LinkedHashSet<>();
        String tables = props.get(ReplicaConfig.FEED_TABLES);
        if (tables != null) {
            for (String t : tables.split(",")) {
                if (!t.isBlank()) {
                    feed.add(t.trim());
                }
            }
        }
        feed.add(view.left().table());
        feed.add(view.right().table());
        out.put(ReplicaConfig.INDEXES, String.join(",", indexes.stream().map(IndexDeclaration::toString).toList()));
        out.put(ReplicaConfig.FEED_TABLES, String.join(",", feed));
        return out;
    }
}
