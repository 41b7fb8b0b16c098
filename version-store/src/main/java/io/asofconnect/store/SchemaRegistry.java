package io.asofconnect.store;

import io.asofconnect.common.data.SchemaCodec;

import org.apache.kafka.connect.data.Schema;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;

/**
 * Each distinct row schema, held once under its fingerprint (the first 8 bytes of the SHA-256 of its
 * canonical encoding, {@link SchemaCodec}); versions refer to it by that id. A schema first seen in a
 * transaction is handed to {@code onNew} (the commit record being built), so it is durable with the
 * first version that uses it, and forgotten again if the transaction rolls back.
 *
 * <p>Two bounded caches: schema → id for the writer, id → decoded schema for readers. Ids are content
 * hashes, so a cached id → schema entry can never be stale.
 */
final class SchemaRegistry {
    private final Path file;
    private final Map<Long, byte[]> encoded = new ConcurrentHashMap<>();
    private final List<Long> addedSinceCommit = new ArrayList<>();
    private final BoundedCache<Schema, Long> ids;
    private final BoundedCache<Long, Schema> decoded;
    private final BiConsumer<Long, byte[]> onNew;
    /**
     * The last schema each side used, compared by identity and id before the caches: a table's rows
     * share one Schema object, and the caches cost a boxed id, or a ConnectSchema hash over every field,
     * per version.
     */
    private Known lastWritten;
    private volatile Known lastRead;

    private record Known(long id, Schema schema) {
    }

    SchemaRegistry(Path file, int cacheSize, BiConsumer<Long, byte[]> onNew) {
        this.file = file;
        this.ids = new BoundedCache<>(cacheSize);
        this.decoded = new BoundedCache<>(cacheSize);
        this.onNew = onNew;
    }

    /** The id of {@code schema}, registering it in the current transaction if the store does not hold it yet. */
    long idFor(Schema schema) {
        Known last = lastWritten;
        if (last != null && last.schema() == schema) {
            return last.id();
        }
        Long cached = ids.get(schema);
        if (cached != null) {
            lastWritten = new Known(cached, schema);
            return cached;
        }
        byte[] bytes = SchemaCodec.encode(schema);
        long id = fingerprint(bytes);
        byte[] held = encoded.get(id);
        if (held == null) {
            encoded.put(id, bytes);
            addedSinceCommit.add(id);
            onNew.accept(id, bytes);
        } else if (!Arrays.equals(held, bytes)) {
            throw new IllegalStateException("two different row schemas share fingerprint " + Long.toHexString(id)
                    + " in " + file.getFileName() + "; this is a SHA-256 prefix collision, report it");
        }
        ids.computeIfAbsent(schema, s -> id);
        lastWritten = new Known(id, schema);
        return id;
    }

    /** The schema with this id. */
    Schema schema(long id) {
        Known last = lastRead;
        if (last != null && last.id() == id) {
            return last.schema();
        }
        Schema s = decoded.computeIfAbsent(id, this::load);
        lastRead = new Known(id, s);
        return s;
    }

    private Schema load(long id) {
        byte[] bytes = encoded.get(id);
        if (bytes == null) {
            throw new StoreCorruptedException(file, "a version refers to row schema " + Long.toHexString(id) + ", which the store does not hold");
        }
        return SchemaCodec.decode(bytes, 0);
    }

    /** Adds a schema read back from a checkpoint or the journal, after checking it decodes to its id. */
    void restore(long id, byte[] bytes) {
        Schema s;
        try {
            s = SchemaCodec.decode(bytes, 0);
        } catch (RuntimeException e) {
            throw new StoreCorruptedException(file, "row schema " + Long.toHexString(id) + " does not decode", e);
        }
        if (fingerprint(SchemaCodec.encode(s)) != id) {
            throw new StoreCorruptedException(file, "row schema " + Long.toHexString(id) + " is stored under a wrong id");
        }
        encoded.put(id, bytes);
    }

    /** The transaction committed: its schemas stay. */
    void onCommit() {
        addedSinceCommit.clear();
    }

    /** The transaction rolled back: the schemas it registered are gone, and must be registered again if used. */
    void onRollback() {
        for (Long id : addedSinceCommit) {
            encoded.remove(id);
        }
        addedSinceCommit.clear();
        ids.clear();
        lastWritten = null;
    }

    Map<Long, byte[]> all() {
        return encoded;
    }

    int count() {
        return encoded.size();
    }

    static long fingerprint(byte[] encoded) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(encoded);
            return ByteBuffer.wrap(d).getLong();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM has no SHA-256, which every Java platform must provide", e);
        }
    }
}
