package io.asofconnect.store;

import io.asofconnect.common.data.RowCodec;
import io.asofconnect.common.data.ByteSink;
import io.asofconnect.common.data.ByteSource;
import io.asofconnect.common.data.MalformedEncodingException;

import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;

import java.nio.file.Path;

/**
 * The body of one version inside a {@link PackedRow}: {@code kind(1) [schemaId(8) row]}, kind 0 for a
 * row and 1 for a tombstone, the row encoded by walking its schema ({@link RowCodec}). The version's
 * valid-from and position live in the packed row's header, so they are not repeated here. Bodies are
 * covered by the checksums of the checkpoint entry or journal record they were loaded from; in memory,
 * decoding is still bounds-checked, so damage is an error, never a wrong row.
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

    /** Encodes the body, registering the row's schema if the store does not hold it yet. */
    byte[] encode(Version v) {
        if (v.isTombstone()) {
            return new byte[]{TOMBSTONE};
        }
        ByteSink out = new ByteSink(96);
        out.write(ROW);
        out.writeLong(schemas.idFor(v.row().schema()));
        RowCodec.writeStruct(v.row(), out);
        return out.toByteArray();
    }

    static boolean isTombstone(byte[] row, int i) {
        return row[PackedRow.bodyStart(row, i)] == TOMBSTONE;
    }

    /** Decodes version {@code i} of a packed row into a fresh Version; {@code table} only names it in errors. */
    Version decode(String table, byte[] row, int i) {
        long validFrom = PackedRow.validFrom(row, i);
        SourcePosition position = new SourcePosition(PackedRow.lsn(row, i), PackedRow.ordinal(row, i));
        try {
            ByteSource in = new ByteSource(row, PackedRow.bodyStart(row, i), PackedRow.bodyEnd(row, i));
            int kind = in.read();
            if (kind == TOMBSTONE) {
                if (!in.atEnd()) {
                    throw new MalformedEncodingException("trailing bytes after a tombstone");
                }
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
}
