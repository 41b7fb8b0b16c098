package io.asofconnect.replica.store;

import io.asofconnect.lookup.SourcePosition;
import io.asofconnect.lookup.Version;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * The stored form of one version: {@code crc32c(4) kind(1) [schemaId(8) row]}, kind 0 for a row and 1
 * for a tombstone. The checksum covers the bytes after it and the entry's whole key (table, row key,
 * valid-from, position), so a value read under the wrong key, a damaged key, or damaged value bytes
 * are all detected on read.
 */
final class VersionCodec {
    private static final int ROW = 0;
    private static final int TOMBSTONE = 1;

    private final Path file;
    private final SchemaRegistry schemas;

    VersionCodec(Path file, SchemaRegistry schemas) {
        this.file = file;
        this.schemas = schemas;
    }

    byte[] encode(String table, byte[] key, Version v) {
        ByteSink out = new ByteSink(128);
        out.writeInt(0);
        if (v.isTombstone()) {
            out.write(TOMBSTONE);
        } else {
            out.write(ROW);
            out.writeLong(schemas.idFor(v.row().schema()));
            RowCodec.writeStruct(v.row(), out);
        }
        out.setInt(0, checksum(table, key, v.validFrom(), v.position().lsn(), v.position().ordinal(), out.array(), out.size()));
        return out.toByteArray();
    }

    /** Decodes the value stored under {@code tuple} (the versions map's key), verifying its checksum. */
    Version decode(Object[] tuple, byte[] stored) {
        String table = (String) tuple[0];
        byte[] key = (byte[]) tuple[1];
        long validFrom = (Long) tuple[2];
        long lsn = (Long) tuple[3];
        int ordinal = (Integer) tuple[4];
        verify(table, key, validFrom, lsn, ordinal, stored);
        SourcePosition position = new SourcePosition(lsn, ordinal);
        try {
            ByteSource in = new ByteSource(stored, 4);
            int kind = in.read();
            if (kind == TOMBSTONE && in.atEnd()) {
                return Version.tombstone(validFrom, position);
            }
            if (kind != ROW) {
                throw new MalformedEncodingException("unknown version kind " + kind);
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

    /** Whether the stored value is a tombstone, after verifying its checksum (used by prune, which need not decode rows). */
    boolean isTombstone(Object[] tuple, byte[] stored) {
        verify((String) tuple[0], (byte[]) tuple[1], (Long) tuple[2], (Long) tuple[3], (Integer) tuple[4], stored);
        return stored[4] == TOMBSTONE;
    }

    private void verify(String table, byte[] key, long validFrom, long lsn, int ordinal, byte[] stored) {
        if (stored == null || stored.length < 5) {
            throw new StoreCorruptedException(file, "a version of table " + table + " is truncated");
        }
        int expected = ((stored[0] & 0xFF) << 24) | ((stored[1] & 0xFF) << 16) | ((stored[2] & 0xFF) << 8) | (stored[3] & 0xFF);
        if (checksum(table, key, validFrom, lsn, ordinal, stored, stored.length) != expected) {
            throw new StoreCorruptedException(file, "a version of table " + table + " fails its checksum");
        }
    }

    private static int checksum(String table, byte[] key, long validFrom, long lsn, int ordinal, byte[] value, int valueLength) {
        CRC32C c = new CRC32C();
        byte[] t = table.getBytes(StandardCharsets.UTF_8);
        ByteSink fixed = new ByteSink(32);
        fixed.writeInt(t.length).writeInt(key.length).writeLong(validFrom).writeLong(lsn).writeInt(ordinal);
        c.update(fixed.array(), 0, fixed.size());
        c.update(t);
        c.update(key);
        c.update(value, 4, valueLength - 4);
        return (int) c.getValue();
    }
}
