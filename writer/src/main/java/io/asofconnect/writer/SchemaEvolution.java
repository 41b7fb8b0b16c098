package io.asofconnect.writer;

/** What the sink may change in the target schema. */
public enum SchemaEvolution {
    /** Nothing: the tables and columns must exist. */
    NONE,
    /** Create a missing table from the record schema, and add missing columns (as nullable). Never drops or alters a column. */
    BASIC
}
