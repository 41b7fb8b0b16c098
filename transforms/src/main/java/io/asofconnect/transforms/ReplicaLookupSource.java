package io.asofconnect.transforms;

import org.apache.kafka.common.config.ConfigException;

import java.util.Map;

/**
 * The worker's shared replicas ({@code io.asofconnect.replica.ReplicaRegistry}) as a {@link LookupSource}:
 * the only place the transform touches the replica module's lifecycle.
 */
final class ReplicaLookupSource implements LookupSource {

    @Override
    public Lease acquire(Map<String, ?> props) {
        // ReplicaRegistry is being written in the replica module; until it lands this fails loudly at configure time.
        throw new ConfigException("the replica registry (io.asofconnect.replica.ReplicaRegistry) is not part of this"
                + " build yet, so AsOfEnrich cannot acquire a replica");
    }
}
