package io.asofconnect.writer;

import java.util.List;

/**
 * How {@link RowMapper} turns a record into a row change: the table it goes to, the statement, where the primary
 * key comes from, whether a tombstone deletes, and whether the value is a changelog entry.
 *
 * @param tableNameFormat  the target table, with {@link WriterSettings#TOPIC_PLACEHOLDER} for the record's topic
 * @param primaryKeyFields trimmed, without empty entries
 * @param changelogOpField null when records are rows; else the value field holding each record's operation
 *                         ({@link ChangelogOp}): the record then deletes or upserts the row its key names, and the
 *                         field is not written. Needs {@link PrimaryKeyMode#RECORD_KEY} and {@link InsertMode#UPSERT}
 *                         (the host validates that).
 */
public record RowMappingRules(String tableNameFormat, InsertMode insertMode, PrimaryKeyMode primaryKeyMode,
                              List<String> primaryKeyFields, boolean deleteEnabled, String changelogOpField) {
    public RowMappingRules {
        primaryKeyFields = List.copyOf(primaryKeyFields);
        if (changelogOpField != null && (changelogOpField.isEmpty() || primaryKeyMode != PrimaryKeyMode.RECORD_KEY
                || insertMode != InsertMode.UPSERT)) {
            throw new IllegalArgumentException("a changelog operation field is non-empty and needs RECORD_KEY and UPSERT");
        }
    }

    /** Rules for records that are rows (no changelog operation field). */
    public RowMappingRules(String tableNameFormat, InsertMode insertMode, PrimaryKeyMode primaryKeyMode,
                           List<String> primaryKeyFields, boolean deleteEnabled) {
        this(tableNameFormat, insertMode, primaryKeyMode, primaryKeyFields, deleteEnabled, null);
    }

    /** The table a topic's records go to, unchecked. */
    public String tableFor(String topic) {
        return tableNameFormat.replace(WriterSettings.TOPIC_PLACEHOLDER, topic);
    }
}
