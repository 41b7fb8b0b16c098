package io.asofconnect.writer;

import java.util.List;

/**
 * How {@link RowMapper} turns a record into a row change: the table it goes to, the statement, where the primary
 * key comes from, and whether a tombstone deletes.
 *
 * @param tableNameFormat  the target table, with {@link WriterSettings#TOPIC_PLACEHOLDER} for the record's topic
 * @param primaryKeyFields trimmed, without empty entries
 */
public record RowMappingRules(String tableNameFormat, InsertMode insertMode, PrimaryKeyMode primaryKeyMode,
                              List<String> primaryKeyFields, boolean deleteEnabled) {
    public RowMappingRules {
        primaryKeyFields = List.copyOf(primaryKeyFields);
    }

    /** The table a topic's records go to, unchecked. */
    public String tableFor(String topic) {
        return tableNameFormat.replace(WriterSettings.TOPIC_PLACEHOLDER, topic);
    }
}
