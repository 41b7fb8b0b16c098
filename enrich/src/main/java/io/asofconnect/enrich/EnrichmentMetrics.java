package io.asofconnect.enrich;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.metrics.LocalPluginMetrics;
import io.asofconnect.metrics.Metered;

import java.util.function.IntSupplier;

/**
 * What an operator graphs about the enrichment, in the sink or in the transform: lookups and what they found
 * (hits, misses, times before the retained history, times past the watermark), records held for the watermark
 * and how long they waited, and records the late policy ({@code enrich.on.late}) decided.
 */
public final class EnrichmentMetrics {
    private final Metered metered;
    private final Metered.Counter lookups;
    private final Metered.Counter hits;
    private final Metered.Counter misses;
    private final Metered.Counter outOfHistory;
    private final Metered.Counter notYetVisible;
    private final Metered.Distribution holdTimeMs;
    private final Metered.Counter late;

    public EnrichmentMetrics(Metered m) {
        metered = m;
        lookups = m.counter("enrich-lookups", "lookups in the replica");
        hits = m.counter("enrich-hits", "lookups that found a row");
        misses = m.counter("enrich-misses", "lookups that found no row (no version yet, or deleted then)");
        outOfHistory = m.counter("enrich-out-of-history", "lookups of a time before the history the replica holds");
        notYetVisible = m.counter("enrich-not-yet-visible", "lookups of a time past the replica's watermark (the record waits)");
        holdTimeMs = m.distribution("enrich-hold-time-ms", "time in ms a record waited for the replica's watermark");
        late = m.counter("enrich-late-records", "records still past the watermark after enrich.lateness.wait.ms, decided by enrich.on.late");
    }

    /** Counts kept privately, for an engine nobody publishes. */
    public static EnrichmentMetrics unpublished() {
        return new EnrichmentMetrics(new Metered(new LocalPluginMetrics()));
    }

    /** The gauge of records waiting for the watermark now. */
    public void heldRecords(IntSupplier held) {
        metered.gauge("enrich-held-records", "records waiting for the replica's watermark", held::getAsInt);
    }

    void looked(LookupResult r) {
        lookups.increment();
        if (r instanceof LookupResult.Found) {
            hits.increment();
        } else if (r instanceof LookupResult.Absent) {
            misses.increment();
        } else if (r instanceof LookupResult.OutOfHistory) {
            outOfHistory.increment();
        } else if (r instanceof LookupResult.NotYetVisible) {
            notYetVisible.increment();
        }
    }

    /** A record that had waited for the watermark was decided after {@code nanos}. */
    public void released(long nanos) {
        holdTimeMs.record(nanos / 1_000_000.0);
    }

    /** A record went to the late policy. */
    public void late() {
        late.increment();
    }
}
