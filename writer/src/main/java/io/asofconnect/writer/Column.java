package io.asofconnect.writer;

/** One target column as a record shapes it. */
record Column(String name, ValueKind kind, boolean optional) {
}
