package io.asofconnect.writer;

/** Where the target table's primary key columns come from. */
public enum PrimaryKeyMode {
    /** No primary key: rows are only appended; UPSERT and deletes are not possible. */
    NONE,
    /** The record's Kafka coordinates: columns {@code __connect_topic}, {@code __connect_partition}, {@code __connect_offset}. */
    KAFKA,
    /** The record key: the fields of a struct or map key, or one column named by primary.key.fields for a primitive key. */
    RECORD_KEY,
    /** The value fields named in primary.key.fields. */
    RECORD_VALUE
}
