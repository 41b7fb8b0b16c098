package io.asofconnect.common.lookup;

import java.util.Arrays;

/**
 * One entry of a replica's change feed: the version {@code id} of the row {@code key} of {@code table}.
 *
 * <p>The feed's order is the store's order of versions, (valid-from, source position), made total across
 * tables by the table's name and then the key's encoding. With valid-from at the commit time this is the
 * commit order of the source, and within one transaction its change order. Two snapshot rows share a
 * version id; name and key then decide, the same way on every replica, so a replay meets them in the same
 * order. A reader that looks rows up "as of" an entry must use the same tie-break
 * ({@link ChangeFeed#before}).
 */
public record Change(VersionId id, String table, RowKey key) implements Comparable<Change> {

    public Change {
        if (id == null || table == null || key == null) {
            throw new IllegalArgumentException("a change needs a version id, a table and a key");
        }
    }

    /** Sorts before every change: a feed read from here starts at its beginning. */
    public static final Change START = new Change(new VersionId(Long.MIN_VALUE, SourcePosition.MIN), "", RowKey.of(""));

    @Override
    public int compareTo(Change o) {
        int c = Long.compare(id.validFrom(), o.id.validFrom());
        if (c != 0) {
            return c;
        }
        c = id.position().compareTo(o.id.position());
        if (c != 0) {
            return c;
        }
        c = table.compareTo(o.table);
        return c != 0 ? c : key.compareTo(o.key);
    }

    /** Whether the version {@code versionId} of {@code table}'s row {@code rowKey} comes before this change. */
    public boolean follows(VersionId versionId, String rowTable, RowKey rowKey) {
        return compareTo(new Change(versionId, rowTable, rowKey)) > 0;
    }

    /** Keys are data: this form names the table and the version, never the key's values. */
    @Override
    public String toString() {
        return "Change{" + table + " " + id + " key#" + Integer.toHexString(Arrays.hashCode(key.encoded())) + "}";
    }
}
