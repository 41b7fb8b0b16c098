package io.asofconnect.common.lookup;

import java.time.Duration;
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
 * null, and a time past the {@linkplain #watermark() watermark} with
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
     * {@code timestamp <= watermark()}: the same answer now, after a restart and after a replay, until
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
     * W, in epoch millis: every change committed at or before W has been applied. Advances while the
     * tables are idle. {@link Long#MIN_VALUE} until the replica has caught up once.
     */
    long watermark();

    /**
     * Waits until {@code watermark() >= timestamp}, at most {@code timeout}.
     *
     * @return whether the watermark reached {@code timestamp}
     */
    boolean awaitWatermark(long timestamp, Duration timeout) throws InterruptedException;

    /**
     * Tells the replica that a reader is waiting for {@code watermark() >= timestamp}, so that it can move the
     * watermark there sooner than its schedule would. Never blocks and never changes what any lookup answers:
     * only when the watermark passes. Abstract rather than a no-op default so that every wrapper passes it on.
     */
    void wantWatermark(long timestamp);

    /**
     * The read-your-writes bound R: every change committed before a record was received at a {@link #sourceNow()}
     * reading at or below R has been applied. At least {@link #watermark()}; ahead of it, by up to the replica's
     * safety margin, once a probe sent after such a reading has come through (a receipt needs the changes committed
     * before it, which a probe sent later follows in the WAL; only commit times need the margin).
     */
    long receiptWatermark();

    /**
     * Waits until {@code receiptWatermark() >= receipt}, at most {@code timeout}.
     *
     * @return whether the receipt watermark reached {@code receipt}
     */
    boolean awaitReceiptWatermark(long receipt, Duration timeout) throws InterruptedException;

    /**
     * Tells the replica that a reader holds a record received at {@code receipt} until {@code receiptWatermark()}
     * reaches it, so that it sends a probe soon. Never blocks and never changes what any lookup answers. Abstract
     * so that every wrapper passes it on.
     */
    void wantReceiptWatermark(long receipt);

    /**
     * Now, in epoch millis on the clock of the source database, the clock of the {@linkplain #watermark()
     * watermark} and of commit times; never behind it, and never lower than an earlier call returned. A reader
     * that needs every change committed before now waits for {@code receiptWatermark() >= sourceNow()} taken now
     * (read-your-writes).
     */
    long sourceNow();

    /** The earliest time a lookup can be answered for; earlier times are {@link LookupResult.OutOfHistory}. */
    long historyStart();

    /** The tables this replica captures, as {@code schema.table}. */
    Set<String> tables();
}
