package io.asofconnect.common.lookup;

import java.util.Set;

/**
 * What the enrichment transform and the sink ask of a replica.
 *
 * <p>Semantics follow Kafka Streams' {@code VersionedKeyValueStore#get(key, asOfTimestamp)}: the
 * version with the greatest valid-from at or before the time asked for, inclusive; a tombstone there
 * means the row was absent. Versions of one key sharing a valid-from instant resolve by source order
 * (the later change wins), as a later put with the same timestamp replaces the earlier one in Kafka
 * Streams. We differ in two ways, both so that no caller can take a wrong answer for a right one:
 * a time before the retained history is answered with {@link LookupResult.OutOfHistory} instead of
 * null, and a time past the {@linkplain Watermark#get() watermark} with
 * {@link LookupResult.NotYetVisible}.
 *
 * <p>Tables are named {@code schema.table} as in Debezium's {@code table.include.list}. Times are
 * epoch milliseconds.
 *
 * <p>Implementations are safe for concurrent use.
 */
public interface VersionLookup {

    /**
     * The row of {@code key} as it was at {@code timestamp}. Deterministic for
     * {@code timestamp <= watermark().get()}: the same answer now, after a restart and after a replay, until
     * retention prunes that time (then {@link LookupResult.OutOfHistory}).
     */
    LookupResult asOf(String table, RowKey key, long timestamp);

    /** The newest version the replica holds, whatever the watermark. Not deterministic across replays. */
    LookupResult current(String table, RowKey key);

    /**
     * The version named by {@code id}, or {@link LookupResult.Absent} when the replica holds no such version;
     * {@link LookupResult.NotYetVisible} when the id is valid from a time past the watermark.
     */
    LookupResult exact(String table, RowKey key, VersionId id);

    /**
     * How far this replica's history is complete, and the source clock it is measured on: the same object for
     * the life of the replica, whatever store it reads. Decorators hand it on unchanged.
     */
    Watermark watermark();

    /** The earliest time a lookup can be answered for; earlier times are {@link LookupResult.OutOfHistory}. */
    long historyStart();

    /** The tables this replica captures, as {@code schema.table}. */
    Set<String> tables();
}
