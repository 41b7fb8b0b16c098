package io.asofconnect.common.lookup;

import java.time.Duration;

/**
 * How far a replica's history is complete, as readers see it: the watermark W (every change committed at or
 * before W has been applied), the read-your-writes bound R, and the source database's clock both are times on.
 * One object per replica, which every lookup decorator hands on unchanged ({@link VersionLookup#watermark()}):
 * nothing here reads the store, so it stays valid while the store behind a lookup is closed or rebuilt.
 *
 * <p>Times are epoch milliseconds on the source database's clock. Implementations are safe for concurrent use.
 */
public interface Watermark {

    /**
     * W: every change committed at or before W has been applied. Advances while the tables are idle.
     * {@link Long#MIN_VALUE} until the replica has caught up once. Never goes back.
     */
    long get();

    /**
     * Waits until {@code get() >= timestamp}, at most {@code timeout}.
     *
     * @return whether the watermark reached {@code timestamp}
     */
    boolean await(long timestamp, Duration timeout) throws InterruptedException;

    /**
     * Tells the replica that a reader is waiting for {@code get() >= timestamp}, so that it can move the
     * watermark there sooner than its schedule would. Never blocks and never changes what any lookup answers:
     * only when the watermark passes.
     */
    void want(long timestamp);

    /**
     * The read-your-writes bound R: every change committed before a record was received at a {@link #sourceNow()}
     * reading at or below R has been applied. At least {@link #get()}; ahead of it, by up to the replica's safety
     * margin, once a probe sent after such a reading has come through (a receipt needs the changes committed
     * before it, which a probe sent later follows in the WAL; only commit times need the margin).
     */
    long receiptWatermark();

    /**
     * Waits until {@code receiptWatermark() >= receipt}, at most {@code timeout}.
     *
     * @return whether the receipt watermark reached {@code receipt}
     */
    boolean awaitReceipts(long receipt, Duration timeout) throws InterruptedException;

    /**
     * Tells the replica that a reader holds a record received at {@code receipt} until {@code receiptWatermark()}
     * reaches it, so that it sends a probe soon. Never blocks and never changes what any lookup answers.
     */
    void wantReceipts(long receipt);

    /**
     * Now, on the clock of the source database, the clock of the watermark and of commit times; never behind
     * it, and never lower than an earlier call returned. A reader that needs every change committed before now
     * waits for {@code receiptWatermark() >= sourceNow()} taken now (read-your-writes).
     */
    long sourceNow();
}
