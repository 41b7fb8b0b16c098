package io.asofconnect.common.record;

/** Where a join key is read from: the record's value (with key field paths) or its key. */
public enum KeySource { VALUE, KEY }
