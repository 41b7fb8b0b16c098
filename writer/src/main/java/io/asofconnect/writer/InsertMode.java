package io.asofconnect.writer;

/** How a record's row is written. */
public enum InsertMode {
    /** Plain {@code INSERT}: a row whose key already exists fails as a constraint violation. */
    INSERT,
    /** {@code INSERT ... ON CONFLICT (primary key) DO UPDATE}: the record's row replaces the existing one. */
    UPSERT
}
