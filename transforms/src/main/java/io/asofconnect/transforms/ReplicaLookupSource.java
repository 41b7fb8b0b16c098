package io.asofconnect.transforms;

import io.asofconnect.common.lookup.VersionLookup;
import io.asofconnect.replica.ReplicaHandle;
import io.asofconnect.replica.ReplicaRegistry;

import java.util.Map;

/**
 * The worker's shared replicas ({@link ReplicaRegistry}) as a {@link LookupSource}: the only place the
 * transform touches the replica module's lifecycle. Each configured transform instance holds one handle;
 * the replica stops when its last holder, transform or sink, releases it.
 */
final class ReplicaLookupSource implements LookupSource {

    @Override
    public Lease acquire(Map<String, ?> props) {
        ReplicaHandle handle = ReplicaRegistry.acquire(props);
        return new Lease() {
            @Override
            public VersionLookup lookup() {
                return handle;
            }

            @Override
            public void close() {
                handle.close();
            }
        };
    }
}
