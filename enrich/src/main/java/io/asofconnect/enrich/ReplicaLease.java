package io.asofconnect.enrich;

import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.replica.ReplicaHandle;
import io.asofconnect.replica.ReplicaRegistry;

import java.util.Map;

/**
 * A host's hold on the replica its enrichment reads: one per configured transform instance or sink task. The
 * replica is shared by every host in the worker that names it, and stops when its last holder releases it.
 */
public interface ReplicaLease extends AutoCloseable {

    /** The replica to read from. */
    VersionLookup lookup();

    /** Releases this hold (once; later calls do nothing in production). */
    @Override
    void close();

    /** Acquires the worker's shared replica named by the {@code replica.*} options of {@code props}. */
    static ReplicaLease fromRegistry(Map<String, ?> props) {
        ReplicaHandle handle = ReplicaRegistry.acquire(props);
        return of(handle, handle::close);
    }

    /** A lease on {@code lookup} that runs {@code release} when closed: for hosts that bring their own replica. */
    static ReplicaLease of(VersionLookup lookup, Runnable release) {
        return new ReplicaLease() {
            @Override
            public VersionLookup lookup() {
                return lookup;
            }

            @Override
            public void close() {
                release.run();
            }
        };
    }
}
