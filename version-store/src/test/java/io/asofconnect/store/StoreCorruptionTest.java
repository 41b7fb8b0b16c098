package io.asofconnect.store;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Damaged files: bytes flipped in the store file at many positions, the WAL of a crashed writer deleted,
 * truncated or flipped. Each open either reports REBUILT with the damaged file quarantined, or serves
 * exactly a committed prefix of the writer's sequence, or refuses a read with StoreCorruptedException.
 * Never a wrong row.
 */
class StoreCorruptionTest {
    private static final int COMMITS = 300;

    @TempDir
    Path dir;

    private Path cleanStore() {
        Path file = dir.resolve("golden").resolve("s.db");
        try {
            Files.createDirectories(file.getParent());
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
            for (long n = 1; n <= COMMITS; n++) {
                StoreCrashWriter.apply(store, n);
                store.commit();
            }
        }
        return file;
    }

    /** Copies the store file and its WAL files to a fresh directory; returns the copy's store path. */
    private Path copyOf(Path file, String name) throws IOException {
        Path target = dir.resolve(name);
        Files.createDirectories(target);
        for (Path p : Quarantine.walFiles(file)) {
            Files.copy(p, target.resolve(p.getFileName()), StandardCopyOption.REPLACE_EXISTING);
        }
        if (Files.exists(file)) {
            Files.copy(file, target.resolve(file.getFileName()), StandardCopyOption.REPLACE_EXISTING);
        }
        return target.resolve(file.getFileName());
    }

    /** Opens the damaged copy and asserts one of the allowed outcomes; returns whether it was rebuilt. */
    private static boolean assertNeverWrong(Path file, long minCommitted, long maxCommitted) {
        try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
            if (store.openOutcome().kind() == OpenOutcome.Kind.REBUILT) {
                assertThat(store.openOutcome().quarantined().map(Files::exists)).contains(true);
                assertThat(store.keys(StoreCrashWriter.TABLE)).isEmpty();
                assertThat(store.watermark()).isEqualTo(Long.MIN_VALUE);
                return true;
            }
            try {
                long n = CrashModel.assertCommittedPrefix(store);
                assertThat(n).isBetween(minCommitted, maxCommitted);
            } catch (StoreCorruptedException detectedOnRead) {
                assertThat(detectedOnRead).hasMessageContaining(file.getFileName().toString());
                System.out.println("detected on read: " + detectedOnRead.what());
            }
            return false;
        }
    }

    private static long lastNonZero(Path file) throws IOException {
        byte[] all = Files.readAllBytes(file);
        for (int i = all.length - 1; i >= 0; i--) {
            if (all[i] != 0) {
                return i;
            }
        }
        return 0;
    }

    private static void flip(Path file, long pos) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(pos);
            int b = raf.read();
            raf.seek(pos);
            raf.write(b ^ 0xFF);
        }
    }

    @Test
    void flippedBytesInTheStoreFileAreDetectedOrHarmless() throws IOException {
        Path golden = cleanStore();
        long used = lastNonZero(golden);
        long seed = Long.getLong("asof.test.seed", System.nanoTime());
        System.out.println("flip seed " + seed + " (rerun with -Dasof.test.seed=" + seed + ")");
        Random rnd = new Random(seed);
        int rebuilt = 0;
        int cases = 0;
        long[] fixed = {0, 1, 7, 8, 16, 24, 32, 40, 48, 64, 100, used / 2, used};
        int randomFlips = Integer.getInteger("asof.test.flips", 40);
        for (int i = 0; i < fixed.length + randomFlips; i++) {
            long pos = i < fixed.length ? fixed[i] : (long) (rnd.nextDouble() * (used + 1));
            Path copy = copyOf(golden, "flip-" + i);
            flip(copy, pos);
            if (assertNeverWrong(copy, COMMITS, COMMITS)) {
                rebuilt++;
            }
            cases++;
        }
        System.out.printf("store flips: %d cases, %d rebuilt (seed %d, used extent %d bytes)%n", cases, rebuilt, seed, used);
        assertThat(rebuilt).as("header damage at least is detected").isPositive();
    }

    @Test
    void damagedOrMissingWalOfACrashedWriterIsDetectedOrReplayedCorrectly() throws Exception {
        Path file = dir.resolve("crashed").resolve("w.db");
        Files.createDirectories(file.getParent());
        // A crash right after a commit can leave no WAL file at all; crash again until one is left to damage.
        long printed = 0;
        List<Path> wals = List.of();
        for (int attempt = 0; attempt < 10 && wals.isEmpty(); attempt++) {
            try (ChildJvm child = new ChildJvm(file)) {
                assertThat(child.nextLine(30_000)).startsWith("OPENED");
                String line = child.nextLine(30_000);
                for (int i = 0; i < 200 && line != null; i++) {
                    String next = child.nextLine(5_000);
                    if (next == null) {
                        break;
                    }
                    line = next;
                }
                String last = child.kill();
                printed = Long.parseLong(last != null ? last : line);
            }
            wals = Quarantine.walFiles(file);
        }
        assertThat(wals).as("MapDB 3.1.0 writes <file>.wal.N").isNotEmpty();
        Random rnd = new Random();
        List<Consumer<Path>> damages = List.of(
                p -> Quarantine.walFiles(p).forEach(StoreCorruptionTest::delete),
                p -> Quarantine.walFiles(p).forEach(w -> truncate(w, size(w) / 2)),
                p -> Quarantine.walFiles(p).forEach(w -> truncate(w, 16)),
                p -> Quarantine.walFiles(p).forEach(w -> flipQuietly(w, rnd.nextInt((int) Math.max(1, size(w))))),
                p -> Quarantine.walFiles(p).forEach(w -> flipQuietly(w, 0)),
                p -> Quarantine.walFiles(p).forEach(w -> flipQuietly(w, 8)));
        int i = 0;
        for (Consumer<Path> damage : damages) {
            Path copy = copyOf(file, "wal-" + i++);
            damage.accept(copy);
            // An older consistent commit is allowed (the engine replays from its older offsets); a wrong one is not.
            assertNeverWrong(copy, 0, printed + 1);
        }
        // Undamaged, the crashed store reopens with what was committed.
        Path copy = copyOf(file, "intact");
        assertNeverWrong(copy, printed, printed + 1);
    }

    private static long size(Path p) {
        try {
            return Files.size(p);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void delete(Path p) {
        try {
            Files.delete(p);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void truncate(Path p, long size) {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
            ch.truncate(size);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void flipQuietly(Path p, long pos) {
        try {
            flip(p, pos);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
