package io.asofconnect.common.record;

/** Where a record's event time is read from. */
public enum TimeSource { RECORD_TIMESTAMP, FIELD, HEADER }
