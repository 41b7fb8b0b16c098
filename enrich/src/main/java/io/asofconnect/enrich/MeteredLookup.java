package io.asofconnect.enrich;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.common.lookup.Watermark;

import java.util.Set;

/** A lookup that counts what it answers, in front of the replica's. */
public final class MeteredLookup implements VersionLookup {
    private final VersionLookup lookup;
    private volatile EnrichmentMetrics metrics;

    public MeteredLookup(VersionLookup lookup, EnrichmentMetrics metrics) {
        this.lookup = lookup;
        this.metrics = metrics;
    }

    /**
     * Counts into {@code metrics} from now on: a transform learns where to publish only after it was configured
     * (Connect calls {@code withPluginMetrics} after {@code configure}).
     */
    public void countInto(EnrichmentMetrics metrics) {
        this.metrics = metrics;
    }

    public EnrichmentMetrics metrics() {
        return metrics;
    }

    @Override
    public LookupResult asOf(String table, RowKey key, long timestamp) {
        return counted(lookup.asOf(table, key, timestamp));
    }

    @Override
    public LookupResult current(String table, RowKey key) {
        return counted(lookup.current(table, key));
    }

    @Override
    public LookupResult exact(String table, RowKey key, VersionId id) {
        return counted(lookup.exact(table, key, id));
    }

    private LookupResult counted(LookupResult r) {
        metrics.looked(r);
        return r;
    }

    @Override
    public Watermark watermark() {
        return lookup.watermark();
    }

    @Override
    public long historyStart() {
        return lookup.historyStart();
    }

    @Override
    public Set<String> tables() {
        return lookup.tables();
    }
}
