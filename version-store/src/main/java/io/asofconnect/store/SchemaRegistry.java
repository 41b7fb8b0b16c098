package io.asofconnect.store;

import org.apache.kafka.connect.data.Schema;
import org.mapdb.BTreeMap;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * Each distinct row schema, stored once in the file under its fingerprint (the first 8 bytes of the
 * SHA-256 of its canonical encoding, {@link SchemaCodec}); versions refer to it by that id. Stored
 * value: {@code crc32c(4) schema-bytes}.
 *
 * <p>Two bounded caches: schema → id for the writer, id → decoded schema for readers. Ids are content
 * hashes, so a cached id → schema entry can never be stale; the writer's cache is cleared on rollback,
 * since a schema registered in a rolled-back transaction is no longer in the file.
 */
final class SchemaRegistry {
    private final Path file;
    private final BTreeMap<Long, byte[]> schemas;
    private final BoundedCache<Schema, Long> ids;
    private final BoundedCache<Long, Schema> decoded;

    SchemaRegistry(Path file, BTreeMap<Long, byte[]> schemas, int cacheSize) {
        this.file = file;
        this.schemas = schemas;
        this.ids = new BoundedCache<>(cacheSize);
        this.decoded = new BoundedCache<>(cacheSize);
    }

    /** The id of {@code schema}, registering it in the current transaction if the file does not have it yet. */
    long idFor(Schema schema) {
        Long cached = ids.get(schema);
        if (cached != null) {
            return cached;
        }
        byte[] encoded = SchemaCodec.encode(schema);
        long id = fingerprint(encoded);
        byte[] stored = schemas.get(id);
        if (stored == null) {
            schemas.put(id, withChecksum(encoded));
        } else if (!Arrays.equals(stored, 4, stored.length, encoded, 0, encoded.length)) {
            throw new IllegalStateException("two different row schemas share fingerprint " + Long.toHexString(id)
                    + " in " + file.getFileName() + "; this is a SHA-256 prefix collision, report it");
        }
        ids.computeIfAbsent(schema, s -> id);
        return id;
    }

    /** The schema with this id, checked against its checksum. */
    Schema schema(long id) {
        Schema s = decoded.get(id);
        if (s != null) {
            return s;
        }
        return decoded.computeIfAbsent(id, this::load);
    }

    private Schema load(long id) {
        byte[] stored = schemas.get(id);
        if (stored == null) {
            throw new StoreCorruptedException(file, "a version refers to row schema " + Long.toHexString(id) + ", which the file does not hold");
        }
        return decodeChecked(id, stored);
    }

    private Schema decodeChecked(long id, byte[] stored) {
        if (stored.length < 4 || crc(stored, 4) != ByteBuffer.wrap(stored).getInt()) {
            throw new StoreCorruptedException(file, "row schema " + Long.toHexString(id) + " fails its checksum");
        }
        try {
            return SchemaCodec.decode(stored, 4);
        } catch (RuntimeException e) {
            throw new StoreCorruptedException(file, "row schema " + Long.toHexString(id) + " does not decode", e);
        }
    }

    /** Reads and checks every stored schema; returns how many there are. */
    int verifyAll() {
        int n = 0;
        for (Map.Entry<Long, byte[]> e : schemas.entrySet()) {
            Schema s = decodeChecked(e.getKey(), e.getValue());
            if (fingerprint(SchemaCodec.encode(s)) != e.getKey()) {
                throw new StoreCorruptedException(file, "row schema " + Long.toHexString(e.getKey()) + " is stored under a wrong id");
            }
            n++;
        }
        return n;
    }

    void onRollback() {
        ids.clear();
    }

    private static byte[] withChecksum(byte[] encoded) {
        byte[] stored = new byte[encoded.length + 4];
        System.arraycopy(encoded, 0, stored, 4, encoded.length);
        ByteBuffer.wrap(stored).putInt(crc(stored, 4));
        return stored;
    }

    private static int crc(byte[] b, int from) {
        CRC32C c = new CRC32C();
        c.update(b, from, b.length - from);
        return (int) c.getValue();
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
