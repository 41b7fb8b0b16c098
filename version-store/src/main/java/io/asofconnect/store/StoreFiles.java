package io.asofconnect.store;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.stream.Stream;

/**
 * The names of a store's files, all derived from the one path its callers know ({@code replica.store.file}):
 * that path is the manifest; {@code <path>.checkpoint-<generation>} and {@code <path>.journal-<generation>}
 * hold the data; {@code <path>.wal.N} are format-2 MapDB write-ahead logs (only ever quarantined). Also
 * the small file-system steps every writer of them needs: force, atomic rename, directory force.
 */
final class StoreFiles {
    static final String CHECKPOINT = ".checkpoint-";
    static final String JOURNAL = ".journal-";
    static final String TEMP = ".tmp";
    private static final String MANIFEST_TEMP = ".manifest" + TEMP;
    private static final String WAL = ".wal.";

    private final Path manifest;

    StoreFiles(Path manifest) {
        this.manifest = manifest;
    }

    Path manifest() {
        return manifest;
    }

    Path manifestTemp() {
        return sibling(MANIFEST_TEMP);
    }

    Path checkpoint(long generation) {
        return sibling(CHECKPOINT + generation);
    }

    Path checkpointTemp(long generation) {
        return sibling(CHECKPOINT + generation + TEMP);
    }

    Path journal(long generation) {
        return sibling(JOURNAL + generation);
    }

    private Path sibling(String suffix) {
        return manifest.resolveSibling(manifest.getFileName() + suffix);
    }

    /** Every file of this store but the manifest, the lock and the damage marker, in name order. */
    static List<Path> dataFiles(Path manifest) {
        String base = manifest.getFileName().toString();
        List<Path> found = new ArrayList<>();
        try (Stream<Path> s = Files.list(manifest.toAbsolutePath().getParent())) {
            s.filter(p -> isDataFile(base, p.getFileName().toString())).sorted().forEach(found::add);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the directory of the version store", e);
        }
        return found;
    }

    private static boolean isDataFile(String base, String name) {
        if (!name.startsWith(base + ".")) {
            return false;
        }
        String suffix = name.substring(base.length());
        return suffix.startsWith(WAL) || suffix.equals(MANIFEST_TEMP) || generationOf(suffix, CHECKPOINT).isPresent()
                || generationOf(suffix, JOURNAL).isPresent();
    }

    /** The generation in a suffix like {@code .journal-7} or {@code .checkpoint-7.tmp}. */
    static OptionalLong generationOf(String suffix, String kind) {
        if (!suffix.startsWith(kind)) {
            return OptionalLong.empty();
        }
        String rest = suffix.substring(kind.length());
        if (rest.endsWith(TEMP)) {
            rest = rest.substring(0, rest.length() - TEMP.length());
        }
        try {
            return OptionalLong.of(Long.parseLong(rest));
        } catch (NumberFormatException e) {
            return OptionalLong.empty();
        }
    }

    /** Deletes the files of generations other than {@code keep}: leftovers of an interrupted or finished switch. */
    void deleteOtherGenerations(long keep) throws IOException {
        String base = manifest.getFileName().toString();
        for (Path p : dataFiles(manifest)) {
            String suffix = p.getFileName().toString().substring(base.length());
            OptionalLong g = generationOf(suffix, CHECKPOINT);
            if (g.isEmpty()) {
                g = generationOf(suffix, JOURNAL);
            }
            boolean stale = g.isPresent() ? g.getAsLong() != keep || suffix.endsWith(TEMP) : suffix.equals(MANIFEST_TEMP);
            if (stale) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** Forces {@code temp} and renames it over {@code target} atomically, then forces the directory. */
    static void commitRename(Path temp, Path target) throws IOException {
        try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.WRITE)) {
            ch.force(true);
        }
        Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        forceDirectory(target.toAbsolutePath().getParent());
    }

    /** Makes a rename or a new file in {@code dir} durable (a no-op where the platform cannot open directories). */
    static void forceDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException e) {
            if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("windows")) {
                throw e;
            }
        }
    }
}
