package io.asofconnect.store;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Moves a damaged store aside, every file of it, so that a fresh store can be created in its place
 * while the old bytes stay available for inspection: the manifest (the store path itself) goes to
 * {@code <file>.quarantined-<epochMillis>}, each sibling ({@link StoreFiles#dataFiles}: checkpoints,
 * journals, temp files, and the {@code .wal.N} logs of format 2) to the same name plus its suffix,
 * e.g. {@code <file>.quarantined-<epochMillis>.journal-3}.
 */
public final class Quarantine {
    private Quarantine() {
    }

    /** The format 2 (MapDB write-ahead log) files of {@code store} that exist now. */
    static List<Path> walFiles(Path store) {
        String prefix = store.getFileName() + ".wal.";
        Path dir = store.toAbsolutePath().getParent();
        List<Path> found = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            s.filter(p -> p.getFileName().toString().startsWith(prefix)).sorted().forEach(found::add);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the directory of the version store", e);
        }
        return found;
    }

    /** Moves {@code store} (if present) and all its data files aside; returns where the store file went. */
    public static Path moveAside(Path store) {
        String base = store.getFileName().toString();
        Path target;
        long millis = System.currentTimeMillis();
        do {
            target = store.resolveSibling(base + ".quarantined-" + millis++);
        } while (Files.exists(target));
        try {
            if (Files.exists(store)) {
                Files.move(store, target, StandardCopyOption.ATOMIC_MOVE);
            }
            Files.deleteIfExists(damagedMarker(store));
            for (Path wal : StoreFiles.dataFiles(store)) {
                String suffix = wal.getFileName().toString().substring(base.length());
                Files.move(wal, target.resolveSibling(target.getFileName() + suffix), StandardCopyOption.ATOMIC_MOVE);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot move the damaged version store " + base + " aside to " + target.getFileName()
                    + "; move or delete it by hand while the replica is stopped", e);
        }
        return target;
    }

    /** The marker a store leaves when it finds itself damaged while open: {@code <file>.damaged}. */
    static Path damagedMarker(Path store) {
        return store.resolveSibling(store.getFileName() + ".damaged");
    }

    /** Leaves the damage marker (best effort: if even that fails, the error that caused it still stops the writer). */
    static void markDamaged(Path store, String reason) {
        try {
            Files.writeString(damagedMarker(store), reason, java.nio.charset.StandardCharsets.UTF_8);
        } catch (IOException ignored) {
            // Nothing better to do here; the caller throws StoreCorruptedException regardless.
        }
    }

    /** Why the store was marked damaged, if it was. */
    static java.util.Optional<String> damageReason(Path store) {
        Path marker = damagedMarker(store);
        if (!Files.exists(marker)) {
            return java.util.Optional.empty();
        }
        try {
            return java.util.Optional.of(Files.readString(marker, java.nio.charset.StandardCharsets.UTF_8));
        } catch (IOException e) {
            return java.util.Optional.of("(marker unreadable: " + e.getMessage() + ")");
        }
    }
}
