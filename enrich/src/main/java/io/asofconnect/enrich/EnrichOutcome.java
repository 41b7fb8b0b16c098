package io.asofconnect.enrich;

import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.errors.DataException;

/**
 * What {@link EnrichmentEngine#tryEnrich} decided for one record. Exactly one of four: the record to pass
 * on, "ask again once the watermark passed {@code visibleAt}", "drop it", or a data error for Connect's
 * error handling ({@code errors.tolerance}, dead letter queue).
 */
public sealed interface EnrichOutcome<R extends ConnectRecord<R>> {

    /**
     * The record to pass on: enriched, or unchanged when there was nothing to enrich (a tombstone, a missing
     * key under {@code PASS_THROUGH}).
     */
    record Enriched<R extends ConnectRecord<R>>(R record) implements EnrichOutcome<R> {
    }

    /**
     * The replica's watermark ({@code watermark}) has not reached {@code visibleAt} yet: the record's event time
     * (answering now could differ from answering on a replay), or, when {@code receipt}, the time the record
     * reached the connector (changes committed before it may not be applied yet), which waits for the receipt
     * watermark instead ({@code watermark} is then that one; {@code VersionLookup#receiptWatermark}). The caller
     * waits (the transform, bounded) or pauses the partition and asks again (the sink); after its wait it calls
     * {@link EnrichmentEngine#resolveLate}.
     */
    record NotYetVisible<R extends ConnectRecord<R>>(long visibleAt, long watermark, boolean receipt) implements EnrichOutcome<R> {
        /** A wait for the watermark to pass an event time (or a rebuilt history's start). */
        public NotYetVisible(long visibleAt, long watermark) {
            this(visibleAt, watermark, false);
        }
    }

    /** The record is to be dropped ({@code enrich.on.miss=DROP}). */
    record Dropped<R extends ConnectRecord<R>>() implements EnrichOutcome<R> {
    }

    /** The record cannot be enriched; {@code reason} names the option, path and types, never the record's values. */
    record Failed<R extends ConnectRecord<R>>(DataException reason) implements EnrichOutcome<R> {
    }
}
