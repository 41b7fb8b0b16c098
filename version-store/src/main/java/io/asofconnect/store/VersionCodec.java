package io.asofconnect.store;

import io.asofconnect.lookup.SourcePosition;
import io.asofconnect.lookup.Version;

import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * The stored form of one version: {@code crc32c(4) kind(1) [schemaId(8) row]}. The kind's low bit is 0
 * for a row and 1 for a tombstone; {@link #FIRST} marks the row's oldest stored version, which lets a
 * lookup that walks a row's versions forward prove it started at the row's beginning (see
 * {@link MapDbVersionStore}). The checksum covers the bytes after it and the entry's whole key
 * ({@link VersionKey}: table id, row key, valid-from, position), so a value read under the wrong key,
 * a damaged key, or damaged value bytes are all detected on read.
 */
final class VersionCodec {
    private static final int ROW = 0;
    private static final int TOMBSTONE = 1;
    private static final int KIND_MASK = 1;
    static final int FIRST = 0x10;

    private final Path file;
    private final SchemaRegistry schemas;

    VersionCodec(Path file, SchemaRegistry schemas) {
        this.file = file;
        this.schemas = schemas;
    }

    byte[] encode(byte[] key, Version v, boolean first) {
        ByteSink out = new ByteSink(96);
        out.writeInt(0);
        int flags = first ? FIRST : 0;
        if (v.isTombstone()) {
            out.write(TOMBSTONE | flags);
        } else {
            out.write(ROW | flags);
            out.writeLong(schemas.idFor(v.row().schema()));
            RowCodec.writeStruct(v.row(), out);
        }
        byte[] stored = out.toByteArray();
        setChecksum(key, stored);
        return stored;
    }

    /** A copy of a verified stored value with its {@link #FIRST} mark set or cleared, checksum renewed. */
    byte[] withFirst(String table, byte[] key, byte[] stored, boolean first) {
        verify(table, key, stored);
        byte[] out = stored.clone();
        out[4] = (byte) (first ? out[4] | FIRST : out[4] & ~FIRST);
        setChecksum(key, out);
        return out;
    }

    /** Decodes the value stored under {@code key}, verifying its checksum; {@code table} only names it in errors. */
    Version decode(String table, byte[] key, byte[] stored) {
        verify(table, key, stored);
        long validFrom = VersionKey.validFrom(key);
        SourcePosition position = new SourcePosition(VersionKey.lsn(key), VersionKey.ordinal(key));
        try {
            ByteSource in = new ByteSource(stored, 4);
            int head = in.read();
            if ((head & ~(KIND_MASK | FIRST)) != 0) {
                throw new MalformedEncodingException("unknown version kind " + head);
            }
            if ((head & KIND_MASK) == TOMBSTONE) {
                if (!in.atEnd()) {
                    throw new MalformedEncodingException("trailing bytes after a tombstone");
                }
                return Version.tombstone(validFrom, position);
            }
            long schemaId = in.readLong();
            Version v = new Version(validFrom, position, RowCodec.readStruct(schemas.schema(schemaId), in));
            if (!in.atEnd()) {
                throw new MalformedEncodingException("trailing bytes after the row at " + in.position());
            }
            return v;
        } catch (StoreCorruptedException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new StoreCorruptedException(file, "a version of table " + table + " does not decode", e);
        }
    }

    /** Whether the stored value is a tombstone, after verifying its checksum (prune need not decode rows). */
    boolean isTombstone(String table, byte[] key, byte[] stored) {
        verify(table, key, stored);
        return (stored[4] & KIND_MASK) == TOMBSTONE;
    }

    /** Whether the stored value is marked as its row's oldest, after verifying its checksum. */
    boolean isFirst(String table, byte[] key, byte[] stored) {
        verify(table, key, stored);
        return (stored[4] & FIRST) != 0;
    }

    private void verify(String table, byte[] key, byte[] stored) {
        if (stored == null || stored.length < 5) {
            throw new StoreCorruptedException(file, "a version of table " + table + " is truncated");
        }
        int expected = ((stored[0] & 0xFF) << 24) | ((stored[1] & 0xFF) << 16) | ((stored[2] & 0xFF) << 8) | (stored[3] & 0xFF);
        if (checksum(key, stored) != expected) {
            throw new StoreCorruptedException(file, "a version of table " + table + " fails its checksum");
        }
    }

    private static void setChecksum(byte[] key, byte[] stored) {
        int c = checksum(key, stored);
        stored[0] = (byte) (c >>> 24);
        stored[1] = (byte) (c >>> 16);
        stored[2] = (byte) (c >>> 8);
        stored[3] = (byte) c;
    }

    private static int checksum(byte[] key, byte[] stored) {
        CRC32C c = new CRC32C();
        c.update(key.length >>> 8);
        c.update(key.length);
        c.update(key, 0, key.length);
        c.update(stored, 4, stored.length - 4);
        return (int) c.getValue();
    }
}
