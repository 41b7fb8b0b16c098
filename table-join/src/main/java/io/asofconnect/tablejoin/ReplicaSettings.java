package io.asofconnect.tablejoin;

import io.asofconnect.common.lookup.IndexDeclaration;

import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * The replica options a view needs beyond what the user wrote: an index on each side's join columns and both tables
 * in the change feed. Index entries are separated by the commas outside their parentheses, as the replica reads them. Derived from the view so the user never writes them; added to any the user gave.
 */
final class ReplicaSettings {
    static final String INDEXES = "replica.indexes";
    static final String FEED_TABLES = "replica.feed.tables";

    private ReplicaSettings() {
    }

    static Map<String, String> forView(Map<String, String> props, ViewDefinition view) {
        Map<String, String> out = new HashMap<>(props);
        Set<String> indexes = new LinkedHashSet<>(split(props.get(INDEXES), ",(?![^(]*\\))"));
        for (IndexDeclaration d : new IndexDeclaration[] {view.left().index(), view.right().index()}) {
            indexes.add(d.toString());
        }
        Set<String> feed = new LinkedHashSet<>(split(props.get(FEED_TABLES), ","));
        feed.add(view.left().table());
        feed.add(view.right().table());
        out.put(INDEXES, String.join(",", indexes));
        out.put(FEED_TABLES, String.join(",", feed));
        return out;
    }

    private static Set<String> split(String text, String separator) {
        Set<String> out = new LinkedHashSet<>();
        if (text != null) {
            for (String s : text.split(separator)) {
                if (!s.isBlank()) {
                    out.add(s.trim());
                }
            }
        }
        return out;
    }
}
