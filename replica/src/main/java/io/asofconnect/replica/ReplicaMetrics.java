package io.asofconnect.replica;

import io.asofconnect.replica.capture.ReplicaStats;
import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.metrics.Metered;

/**
 * The replica's gauges, published by each task or transform that reads it (tagged {@code replica=<name>}), so
 * that an operator sees how far behind it is, what its slot costs the source, how much it holds and what it
 * went through, next to the metrics of the connector that depends on it. Read when the metrics are read.
 */
public final class ReplicaMetrics {
    private ReplicaMetrics() {
    }

    /** Publishes the gauges of the replica behind {@code lookup}, if it is one of the worker's replicas. */
    public static void publish(Metered metered, VersionLookup lookup) {
        if (!(lookup instanceof ReplicaHandle handle)) {
            return;
        }
        Metered m = metered.tagged("replica", handle.replicaName());
        ReplicaStats s = handle.stats();
        m.gauge("replica-watermark", "the watermark W, epoch ms: every change committed at or before it is in the replica",
                () -> known(handle.watermark().get()));
        m.gauge("replica-watermark-lag-ms", "how far the watermark trails the source database's clock, in ms", () -> {
            long w = handle.watermark().get();
            return w == Long.MIN_VALUE ? Double.NaN : Math.max(0, handle.watermark().sourceNow() - w);
        });
        m.gauge("replica-slot-retained-wal-bytes", "WAL the source keeps for the replica's slot, in bytes", () -> unknownAsNaN(s.retainedWalBytes()));
        m.gauge("replica-versions", "versions the replica holds", () -> unknownAsNaN(handle.footprint().versions()));
        m.gauge("replica-keys", "keys the replica holds", () -> unknownAsNaN(handle.footprint().keys()));
        m.gauge("replica-store-bytes", "bytes of the replica's store files on disk", () -> unknownAsNaN(handle.footprint().diskBytes()));
        m.gauge("replica-changes-applied-total", "row changes and snapshot rows stored since the replica started", s::changesApplied);
        m.gauge("replica-snapshot-rows", "initial snapshot rows stored since the replica started", s::snapshotRows);
        m.gauge("replica-snapshot-rows-estimated", "rows the captured tables hold by the planner's estimate (pg_class.reltuples)",
                () -> unknownAsNaN(s.snapshotRowsEstimated()));
        m.gauge("replica-rebuilds-total", "store files rebuilt empty (damage, a gap, an interrupted snapshot) since start", s::rebuilds);
        m.gauge("replica-quarantines-total", "store files moved aside since start", s::quarantines);
        m.gauge("replica-gap-detections-total", "gaps found between the stored history and the slot since start", s::gapDetections);
    }

    private static double known(long watermark) {
        return watermark == Long.MIN_VALUE ? Double.NaN : watermark;
    }

    private static double unknownAsNaN(long v) {
        return v < 0 ? Double.NaN : v;
    }
}
