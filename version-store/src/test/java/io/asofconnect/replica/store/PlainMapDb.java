package io.asofconnect.replica.store;

import org.mapdb.DB;
import org.mapdb.DBMaker;
import org.mapdb.Serializer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * Reads a store file with MapDB alone, none of the store's code: each of its B-trees entry by entry (their
 * names and serializers are the file's layout). Tells whether a file the store rebuilt really was damaged,
 * rather than trusting the store's own verdict.
 */
final class PlainMapDb {
    private PlainMapDb() {
    }

    /** What failed while reading {@code file} (and its WAL, which MapDB replays), or empty if it all read back. */
    static Optional<String> readFailure(Path file) {
        // Every entry takes at least a byte: more entries than bytes means a damaged leaf chain that loops.
        long limit = size(file) + Quarantine.walFiles(file).stream().mapToLong(PlainMapDb::size).sum();
        try (DB db = DBMaker.fileDB(file.toFile()).transactionEnable().fileMmapEnableIfSupported().make()) {
            long entries = 0;
            entries += readAll(db.treeMap("meta", Serializer.STRING, Serializer.STRING).open(), limit);
            entries += readAll(db.treeMap("versions", Serializer.BYTE_ARRAY_DELTA, Serializer.BYTE_ARRAY).open(), limit);
            entries += readAll(db.treeMap("offsets", Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY).open(), limit);
            entries += readAll(db.treeMap("schemas", Serializer.LONG, Serializer.BYTE_ARRAY).open(), limit);
            return entries > 0 ? Optional.empty() : Optional.of("no entries at all");
        } catch (RuntimeException | AssertionError e) {
            return Optional.of(e.toString());
        }
    }

    private static long readAll(Map<?, ?> map, long limit) {
        long n = 0;
        for (Map.Entry<?, ?> e : map.entrySet()) {
            if (e.getKey() == null || e.getValue() == null || ++n > limit) {
                throw new IllegalStateException("a B-tree yields a null or more entries than the file has bytes (" + limit + ")");
            }
        }
        return n;
    }

    private static long size(Path p) {
        try {
            return Files.size(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
