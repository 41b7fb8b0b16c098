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
 * Damaged files: bytes flipped in the checkpoint and the manifest at many positions, the journal of a
 * crashed writer deleted, truncated or flipped, the checkpoint or manifest deleted. Where bytes are
 * really damaged, each open either reports REBUILT with the damaged store quarantined, or serves exactly
 * a committed prefix of the writer's sequence, or refuses a read with StoreCorruptedException. Never a
 * wrong row. Where the store is intact (no damage at all, or only a torn journal tail), the open must
 * report REOPENED with its commits: a store that rebuilt on every open would pass the first half alone.
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

    /** Copies the manifest and every data file of the store to a fresh directory; returns the copy's store path. */
    private Path copyOf(Path file, String name) throws IOException {
        Path target = dir.resolve(name);
        Files.createDirectories(target);
        for (Path p : StoreFiles.dataFiles(file)) {
            Files.copy(p, target.resolve(p.getFileName()), StandardCopyOption.REPLACE_EXISTING);
        }
        if (Files.exists(file)) {
            Files.copy(file, target.resolve(file.getFileName()), StandardCopyOption.REPLACE_EXISTING);
        }
        return target.resolve(file.getFileName());
    }

    /** Opens an intact copy and asserts that it reopens with exactly {@code committed} transactions. */
    private static void assertReopensWith(Path file, long committed, String what) {
        try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
            assertThat(store.openOutcome().kind()).as("%s: an intact store reopens, not rebuilt (reason %s)", what,
                    store.openOutcome().reason()).isEqualTo(OpenOutcome.Kind.REOPENED);
            assertThat(CrashModel.assertCommittedPrefix(store)).as("%s: commits served", what).isEqualTo(committed);
        }
    }

    /** The only file of a generation's kind ({@link StoreFiles#CHECKPOINT} or {@link StoreFiles#JOURNAL}). */
    private static Path only(Path file, String kind) {
        List<Path> found = StoreFiles.dataFiles(file).stream()
                .filter(p -> p.getFileName().toString().startsWith(file.getFileName() + kind)).toList();
        assertThat(found).as("files %s* of %s", kind, file.getFileName()).hasSize(1);
        return found.get(0);
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
    void flippedBytesInTheCheckpointOrManifestAreDetectedOrHarmless() throws IOException {
        Path golden = cleanStore();
        // The control: unflipped, the same files keep their data, so a rebuild below is the flip's doing.
        assertReopensWith(copyOf(golden, "unflipped"), COMMITS, "the unflipped copy");
        Path checkpoint = only(golden, StoreFiles.CHECKPOINT);
        long used = lastNonZero(checkpoint);
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
            flip(only(copy, StoreFiles.CHECKPOINT), pos);
            if (assertNeverWrong(copy, COMMITS, COMMITS)) {
                rebuilt++;
            }
            cases++;
        }
        for (long pos : new long[]{0, 8, 12, 19, 20, 23}) {
            Path copy = copyOf(golden, "manifest-flip-" + pos);
            flip(copy, pos);
            assertThat(assertNeverWrong(copy, COMMITS, COMMITS)).as("manifest byte %s flipped", pos).isTrue();
        }
        System.out.printf("checkpoint flips: %d cases, %d rebuilt (seed %d, used extent %d bytes)%n", cases, rebuilt, seed, used);
        assertThat(rebuilt).as("header damage at least is detected").isPositive();
    }

    @Test
    void lostCheckpointOrManifestRebuilds() throws IOException {
        Path golden = cleanStore();
        Path noCheckpoint = copyOf(golden, "no-checkpoint");
        delete(only(noCheckpoint, StoreFiles.CHECKPOINT));
        assertThat(assertNeverWrong(noCheckpoint, COMMITS, COMMITS)).as("checkpoint deleted").isTrue();
        Path noManifest = copyOf(golden, "no-manifest");
        String checkpointSuffix = only(noManifest, StoreFiles.CHECKPOINT).getFileName().toString().substring(noManifest.getFileName().toString().length());
        delete(noManifest);
        try (MapDbVersionStore store = MapDbVersionStore.open(noManifest, StoreOptions.defaults())) {
            assertThat(store.openOutcome().kind()).as("manifest deleted").isEqualTo(OpenOutcome.Kind.REBUILT);
            assertThat(store.keys(StoreCrashWriter.TABLE)).isEmpty();
            // No manifest to move: its checkpoint went aside under the quarantine name.
            assertThat(Path.of(store.openOutcome().quarantined().orElseThrow() + checkpointSuffix)).exists();
        }
    }

    @Test
    void damagedOrMissingJournalOfACrashedWriterIsDetectedOrReplayedCorrectly() throws Exception {
        Path file = dir.resolve("crashed").resolve("w.db");
        Files.createDirectories(file.getParent());
        long printed = 0;
        {
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
        }
        Random rnd = new Random();
        List<Consumer<Path>> damages = List.of(
                p -> delete(only(p, StoreFiles.JOURNAL)),
                p -> truncate(only(p, StoreFiles.JOURNAL), size(only(p, StoreFiles.JOURNAL)) / 2),
                p -> truncate(only(p, StoreFiles.JOURNAL), 16),
                p -> flipQuietly(only(p, StoreFiles.JOURNAL), rnd.nextInt((int) Math.max(1, size(only(p, StoreFiles.JOURNAL))))),
                p -> flipQuietly(only(p, StoreFiles.JOURNAL), 0),
                p -> flipQuietly(only(p, StoreFiles.JOURNAL), 8));
        int i = 0;
        for (Consumer<Path> damage : damages) {
            Path copy = copyOf(file, "wal-" + i++);
            damage.accept(copy);
            // An older consistent commit is allowed (the engine replays from its older offsets); a wrong one is not.
            assertNeverWrong(copy, 0, printed + 1);
        }
        // Undamaged, the crashed store reopens with what was committed: all it reported, perhaps one more.
        long committed;
        try (MapDbVersionStore store = MapDbVersionStore.open(copyOf(file, "intact"), StoreOptions.defaults())) {
            assertThat(store.openOutcome().kind()).as("reason %s", store.openOutcome().reason()).isEqualTo(OpenOutcome.Kind.REOPENED);
            committed = CrashModel.assertCommittedPrefix(store);
            assertThat(committed).isBetween(printed, printed + 1);
        }
        // A record failing its checksum with valid records after it is damage, never a silently shorter history.
        Path mid = copyOf(file, "mid-journal");
        flipQuietly(only(mid, StoreFiles.JOURNAL), Journal.HEADER + Journal.RECORD_HEADER + 1);
        try (MapDbVersionStore store = MapDbVersionStore.open(mid, StoreOptions.defaults())) {
            assertThat(store.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.REBUILT);
            assertThat(store.openOutcome().reason()).contains("valid records follow");
            assertThat(Files.exists(Path.of(store.openOutcome().quarantined().orElseThrow() + StoreFiles.JOURNAL + "1"))).isTrue();
        }
    }

    /**
     * A writer killed while it holds an uncommitted transaction: the journal holds every commit and
     * nothing of that transaction, which was never appended. The store reopens with exactly the commits.
     */
    @Test
    void aKilledWritersUncommittedTransactionIsNotInTheJournal() throws Exception {
        Path file = dir.resolve("paused").resolve("p.db");
        Files.createDirectories(file.getParent());
        long committed;
        try (ChildJvm child = new ChildJvm(file, "pause=" + COMMITS)) {
            assertThat(child.nextLine(30_000)).startsWith("OPENED");
            String line = child.nextLine(60_000);
            while (line != null && !line.startsWith(StoreCrashWriter.PAUSED)) {
                line = child.nextLine(60_000);
            }
            assertThat(line).as("writer paused in its transaction %s; its stderr:%n%s", COMMITS + 1, child.stderrTail()).isNotNull();
            committed = Long.parseLong(line.substring(StoreCrashWriter.PAUSED.length()));
            child.kill();
        }
        assertThat(committed).isEqualTo(COMMITS);
        assertReopensWith(copyOf(file, "paused-intact"), committed, "the killed writer's store");
        // A record torn at the tail (a crash cut its append short): that commit is dropped, every earlier one kept.
        // Cut here, where the journal is known to end with a whole record: a writer killed at a random point may
        // have left the next record half written, and a cut into that one drops no commit.
        Path torn = copyOf(file, "torn-tail");
        Path journal = only(torn, StoreFiles.JOURNAL);
        truncate(journal, size(journal) - 3);
        assertReopensWith(torn, committed - 1, "journal cut 3 bytes into its last record");
        assertReopensWith(torn, committed - 1, "the torn tail was truncated: the next open agrees");
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
