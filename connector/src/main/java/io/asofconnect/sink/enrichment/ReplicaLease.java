package io.asofconnect.sink.enrichment;

import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.replica.ReplicaHandle;
import io.asofconnect.replica.ReplicaRegistry;

import java.util.Map;

/** The replica the sink's enrichment reads from, and how to give it back; the worker's shared replica in production. */
public record ReplicaLease(VersionLookup lookup, AutoCloseable release) {

    /** Acquires the replica named by the task's {@code replica.*} options from the worker's registry. */
    public static ReplicaLease fromRegistry(Map<String, String> props) {
        ReplicaHandle handle = ReplicaRegistry.acquire(props);
        return new ReplicaLease(handle, handle);
    }
}
