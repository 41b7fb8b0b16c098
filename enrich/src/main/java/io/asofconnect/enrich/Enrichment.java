package io.asofconnect.enrich;

import java.util.Map;
import java.util.function.Function;

/**
 * The enrichment as a host runs it, built in one place for the transform and the sink alike: the
 * {@code enrich.*} options, a lease on the replica named by the {@code replica.*} options, the lookup over it that
 * counts its answers, and the engine. Closing it closes the engine, then gives the replica back.
 */
public final class Enrichment implements AutoCloseable {
    private final EnrichConfig config;
    private final ReplicaLease lease;
    private final MeteredLookup lookup;
    private final EnrichmentEngine engine;

    private Enrichment(EnrichConfig config, ReplicaLease lease, MeteredLookup lookup, EnrichmentEngine engine) {
        this.config = config;
        this.lease = lease;
        this.lookup = lookup;
        this.engine = engine;
    }

    /**
     * Validates {@code props}, acquires the replica through {@code replicas} and builds the engine, counting its
     * lookups into {@code metrics}. Nothing is held when it fails: a lease already taken is given back.
     */
    public static Enrichment start(Map<String, ?> props, Function<Map<String, ?>, ReplicaLease> replicas,
                                   EnrichmentMetrics metrics) {
        EnrichConfig config = new EnrichConfig(props);
        ReplicaLease lease = replicas.apply(props);
        try {
            MeteredLookup lookup = new MeteredLookup(lease.lookup(), metrics);
            return new Enrichment(config, lease, lookup, new EnrichmentEngine(config, lookup));
        } catch (RuntimeException e) {
            try {
                lease.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    public EnrichConfig config() {
        return config;
    }

    public EnrichmentEngine engine() {
        return engine;
    }

    /** The lookup the engine reads through, which counts into the metrics it was started or later told of. */
    public MeteredLookup lookup() {
        return lookup;
    }

    /** The replica behind the lookup, for its own metrics. */
    public ReplicaLease lease() {
        return lease;
    }

    @Override
    public void close() {
        try {
            engine.close();
        } finally {
            lease.close();
        }
    }
}
