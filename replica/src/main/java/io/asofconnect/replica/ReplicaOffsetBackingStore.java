package io.asofconnect.replica;

import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.storage.OffsetBackingStore;
import org.apache.kafka.connect.util.Callback;

import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;

/**
 * The embedded engine's offset store, backed by the replica's version store. Debezium instantiates it by
 * class name ({@code offset.storage}) and configures it with the engine's worker config, whose
 * {@code name} is the replica's engine name; the replica and its store are found through {@link ReplicaRegistry}.
 *
 * <p>{@link #set} acknowledges without writing: the batch consumer already wrote the very same offsets,
 * serialized the same way, into the version store in the commit that applied the batch. Writing them here
 * again, later and separately, is exactly the window (versions durable, offsets not, or the reverse) this
 * design removes. The engine still calls {@code set} on every offset flush, and then lets the connector
 * confirm the LSN to the server, which is why {@code set} must succeed.
 */
public final class ReplicaOffsetBackingStore implements OffsetBackingStore {
    private volatile String engineName;

    public ReplicaOffsetBackingStore() {
        // Instantiated by Debezium through its no-argument constructor.
    }

    @Override
    public void configure(WorkerConfig config) {
        engineName = config.originalsStrings().get("name");
    }

    @Override
    public void start() {
        replica();
    }

    @Override
    public void stop() {
        // The replica owns the store and closes it.
    }

    /**
     * Called whenever the connector (re)starts its streaming, also after Debezium's own retries that we do not
     * see otherwise (and on its offset commits too): the moment to make sure the slot still continues the
     * stored history, before the connector would recreate a missing slot and carry on past a gap.
     */
    @Override
    public Future<Map<ByteBuffer, ByteBuffer>> get(Collection<ByteBuffer> keys) {
        Replica replica = replica();
        replica.verifyResumable();
        Map<ByteBuffer, ByteBuffer> all = replica.store().offsets();
        Map<ByteBuffer, ByteBuffer> out = new HashMap<>();
        for (ByteBuffer k : keys) {
            ByteBuffer v = all.get(k);
            if (v != null) {
                out.put(k, v);
            }
        }
        return CompletableFuture.completedFuture(out);
    }

    @Override
    public Future<Void> set(Map<ByteBuffer, ByteBuffer> values, Callback<Void> callback) {
        if (callback != null) {
            callback.onCompletion(null, null);
        }
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public Set<Map<String, Object>> connectorPartitions(String connectorName) {
        return Set.of();
    }

    private Replica replica() {
        if (engineName == null) {
            throw new IllegalStateException(getClass().getSimpleName() + " was not configured with the engine name");
        }
        return ReplicaRegistry.engineReplica(engineName);
    }
}
