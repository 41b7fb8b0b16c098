package io.asofconnect.store;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static io.asofconnect.common.testing.Bytes.find;
import static io.asofconnect.common.testing.Bytes.flip;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Damaged files, each damage with the one outcome it must have (docs/faults.md case 20):
 * <ul>
 * <li>a lost manifest, checkpoint or journal: REBUILT, with every remaining file moved aside unchanged and the
 * new store empty;
 * <li>a journal cut anywhere past its header: REOPENED with exactly the commits whose records lie whole before
 * the cut, found here by walking the record framing the format defines, and nothing of a later commit; a cut
 * into the header: REBUILT;
 * <li>a flipped byte in the manifest (any of its 24), in a checkpoint entry, in the journal's header, or in a
 * journal record followed by a whole one: REBUILT, the damaged bytes kept aside. In the journal's last whole
 * record a flip looks exactly like an append a crash tore, so that one commit is dropped and every earlier one
 * kept. Elsewhere in the checkpoint (MapDB's own page structure) a flip is REBUILT, or, in bytes the load never
 * reads, REOPENED with every commit.
 * </ul>
 * Never a wrong row, never part of a checkpoint, never damage left to be found on a later read. The controls
 * (an undamaged copy, journals cut at record boundaries) must reopen: a store that rebuilt on every open would
 * pass the rebuild cases alone.
 */
class StoreCorruptionTest {
    private static final int COMMITS = 300;
    /** The journal's framing, from its format (Journal's javadoc), so that this oracle does not reuse the reader it checks. */
    private static final int JOURNAL_HEADER = 24; // magic(8) format(4) generation(8) crc32c(4)
    private static final int RECORD_HEADER = 16; // length(4) crc32c(4) sequence(8), then the payload

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
            assertThat(store.openOutcome().kind()).as("%s: reopens, not rebuilt (reason %s)", what,
                    store.openOutcome().reason()).isEqualTo(OpenOutcome.Kind.REOPENED);
            assertThat(CrashModel.assertCommittedPrefix(store)).as("%s: commits served", what).isEqualTo(committed);
        }
    }

    /**
     * Opens the damaged copy and asserts the rebuild: REBUILT for a reason containing {@code reason}, every file
     * that was there moved aside under the quarantine name byte for byte (the damage kept for inspection), and the
     * new store empty.
     */
    private static void assertRebuilt(Path file, String reason, String what) throws IOException {
        Map<String, byte[]> before = filesOf(file);
        try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
            assertRebuilt(store, before, reason, what);
        }
    }

    private static void assertRebuilt(MapDbVersionStore store, Map<String, byte[]> before, String reason, String what) throws IOException {
        OpenOutcome outcome = store.openOutcome();
        assertThat(outcome.kind()).as("%s: rebuilt (reason %s)", what, outcome.reason()).isEqualTo(OpenOutcome.Kind.REBUILT);
        assertThat(outcome.reason()).as("%s: why", what).contains(reason);
        Path aside = outcome.quarantined().orElseThrow();
        String base = store.file().getFileName().toString();
        for (Map.Entry<String, byte[]> f : before.entrySet()) {
            Path moved = aside.resolveSibling(aside.getFileName() + f.getKey());
            assertThat(moved).as("%s: %s%s kept aside", what, base, f.getKey()).exists();
            assertThat(Files.readAllBytes(moved)).as("%s: %s%s kept unchanged", what, base, f.getKey()).isEqualTo(f.getValue());
        }
        assertThat(store.keys(StoreCrashWriter.TABLE)).as(what).isEmpty();
        assertThat(store.keys(StoreCrashWriter.BULK_TABLE)).as(what).isEmpty();
        assertThat(store.watermark()).as(what).isEqualTo(Long.MIN_VALUE);
        assertThat(store.offsets()).as(what).isEmpty();
        assertThat(store.meta(StoreCrashWriter.SEQ)).as(what).isEmpty();
    }

    /** The store's files as they are now, by their name's suffix after the store's ("" for the manifest). */
    private static Map<String, byte[]> filesOf(Path file) throws IOException {
        String base = file.getFileName().toString();
        Map<String, byte[]> found = new LinkedHashMap<>();
        try (Stream<Path> s = Files.list(file.getParent())) {
            for (Path p : s.filter(p -> p.getFileName().toString().startsWith(base)).sorted().toList()) {
                found.put(p.getFileName().toString().substring(base.length()), Files.readAllBytes(p));
            }
        }
        return found;
    }

    /** The only file of a generation's kind ({@link StoreFiles#CHECKPOINT} or {@link StoreFiles#JOURNAL}). */
    private static Path only(Path file, String kind) {
        List<Path> found = StoreFiles.dataFiles(file).stream()
                .filter(p -> p.getFileName().toString().startsWith(file.getFileName() + kind)).toList();
        assertThat(found).as("files %s* of %s", kind, file.getFileName()).hasSize(1);
        return found.get(0);
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

    /** Where {@code text} first occurs in the file, in UTF-8: bytes of the test's own rows, tables and meta. */
    private static int offsetOf(Path file, String text) throws IOException {
        return find(Files.readAllBytes(file), text, file.getFileName().toString());
    }

    @Test
    void everyFlippedManifestByteRebuilds() throws IOException {
        Path golden = cleanStore();
        assertReopensWith(copyOf(golden, "manifest-control"), COMMITS, "the unflipped copy");
        for (int pos = 0; pos < 24; pos++) {
            Path copy = copyOf(golden, "manifest-flip-" + pos);
            flip(copy, pos);
            // magic(8) format(4) generation(8) crc32c(4): the magic is checked first, then the checksum over the rest.
            assertRebuilt(copy, pos < 8 ? "not a version store manifest" : "the manifest fails its checksum", "manifest byte " + pos + " flipped");
        }
    }

    /**
     * Bytes of the store's own data (a row's body, the bulk table's rows, the table dictionary and the meta in the
     * store state) are inside checkpoint entries, each checked against its CRC32C on open: the flip is found there,
     * whatever the byte decodes to.
     */
    @Test
    void aFlippedByteInACheckpointEntryFailsItsChecksumOnOpen() throws IOException {
        Path golden = cleanStore();
        assertReopensWith(copyOf(golden, "entry-control"), COMMITS, "the unflipped copy");
        // Notes of new-shape rows (TestRows): transaction 150's version of key 30, and the bulk load at 200.
        List<String> markers = List.of("n-150-\u00fc", "n-200-\u00fc", StoreCrashWriter.TABLE, StoreCrashWriter.BULK_TABLE, StoreCrashWriter.SEQ);
        int i = 0;
        for (String marker : markers) {
            Path copy = copyOf(golden, "entry-flip-" + i++);
            Path checkpoint = only(copy, StoreFiles.CHECKPOINT);
            flip(checkpoint, offsetOf(checkpoint, marker) + 2);
            assertRebuilt(copy, "the checkpoint " + checkpoint.getFileName() + " is damaged: an entry fails its checksum",
                    "a byte of \"" + marker + "\" flipped in the checkpoint");
        }
    }

    /**
     * A flip anywhere in the checkpoint's used extent, MapDB's page structure included: detected on open, or in a
     * byte the load does not read, so that every commit is served exactly (checked row by row here, so damage found
     * only on a later read fails this too). Which of MapDB's bytes go unread is MapDB's business; that no flip
     * yields a wrong or partial store is ours.
     */
    @Test
    void aFlippedByteAnywhereInTheCheckpointRebuildsOrWasNeverRead() throws IOException {
        Path golden = cleanStore();
        assertReopensWith(copyOf(golden, "unflipped"), COMMITS, "the unflipped copy");
        Path checkpoint = only(golden, StoreFiles.CHECKPOINT);
        String reason = "the checkpoint " + checkpoint.getFileName();
        // MapDB's file header: its magic is read by every open.
        Path header = copyOf(golden, "mapdb-header");
        flip(only(header, StoreFiles.CHECKPOINT), 0);
        assertRebuilt(header, reason + " does not read back", "the checkpoint's first byte flipped");
        long used = lastNonZero(checkpoint);
        long seed = Long.getLong("asof.test.seed", System.nanoTime());
        System.out.println("flip seed " + seed + " (rerun with -Dasof.test.seed=" + seed + ")");
        Random rnd = new Random(seed);
        int rebuilt = 0;
        int flips = Integer.getInteger("asof.test.flips", 40);
        for (int i = 0; i < flips; i++) {
            long pos = (long) (rnd.nextDouble() * (used + 1));
            Path copy = copyOf(golden, "flip-" + i);
            flip(only(copy, StoreFiles.CHECKPOINT), pos);
            Map<String, byte[]> before = filesOf(copy);
            try (MapDbVersionStore store = MapDbVersionStore.open(copy, StoreOptions.defaults())) {
                String what = "checkpoint byte " + pos + " flipped (seed " + seed + ")";
                if (store.openOutcome().kind() == OpenOutcome.Kind.REBUILT) {
                    rebuilt++;
                    assertRebuilt(store, before, reason, what);
                } else {
                    assertThat(store.openOutcome().kind()).as(what).isEqualTo(OpenOutcome.Kind.REOPENED);
                    assertThat(CrashModel.assertCommittedPrefix(store)).as("%s, not read: every commit", what).isEqualTo(COMMITS);
                }
            }
        }
        System.out.printf("checkpoint flips: %d cases, %d rebuilt (seed %d, used extent %d bytes)%n", flips, rebuilt, seed, used);
    }

    @Test
    void aLostManifestCheckpointOrJournalRebuilds() throws IOException {
        Path golden = cleanStore();
        Path noCheckpoint = copyOf(golden, "no-checkpoint");
        Path checkpoint = only(noCheckpoint, StoreFiles.CHECKPOINT);
        delete(checkpoint);
        assertRebuilt(noCheckpoint, "the manifest names checkpoint " + checkpoint.getFileName() + ", which does not exist", "checkpoint deleted");
        Path noJournal = copyOf(golden, "no-journal");
        Path journal = only(noJournal, StoreFiles.JOURNAL);
        delete(journal);
        assertRebuilt(noJournal, "the manifest names journal " + journal.getFileName() + ", which does not exist", "journal deleted");
        Path noManifest = copyOf(golden, "no-manifest");
        delete(noManifest);
        // No manifest to move: the checkpoint and journal still go aside under the quarantine name.
        assertRebuilt(noManifest, "store files without their manifest", "manifest deleted");
    }

    /** A record of a journal: {@code [start, end)} in the file. */
    private record Span(long start, long end) {
        long payload() {
            return end - start - RECORD_HEADER;
        }
    }

    /**
     * The whole records of a journal, walked by the format alone: after the header, a record is whole if it lies
     * inside the file, its CRC32C over length, sequence and payload holds, and it carries the next sequence. The
     * first that is not ends the walk (a kill can leave a record torn at the tail).
     */
    private static List<Span> wholeRecords(Path journal) throws IOException {
        byte[] all = Files.readAllBytes(journal);
        ByteBuffer b = ByteBuffer.wrap(all);
        List<Span> records = new ArrayList<>();
        int pos = JOURNAL_HEADER;
        for (long seq = 1; pos + RECORD_HEADER <= all.length; seq++) {
            int length = b.getInt(pos);
            if (length < 0 || length > all.length - pos - RECORD_HEADER) {
                break;
            }
            CRC32C crc = new CRC32C();
            crc.update(all, pos, 4);
            crc.update(all, pos + 8, 8 + length);
            if ((int) crc.getValue() != b.getInt(pos + 4) || b.getLong(pos + 8) != seq) {
                break;
            }
            records.add(new Span(pos, pos + RECORD_HEADER + length));
            pos += RECORD_HEADER + length;
        }
        return records;
    }

    private static long wholeBefore(List<Span> records, long cut) {
        return records.stream().filter(r -> r.end() <= cut).count();
    }

    /** A {@link StoreCrashWriter} that started on no store and was SIGKILLed some 200 commits in. */
    private record Crashed(Path file, Path journal, List<Span> records) {
    }

    private Crashed crashedWriter(String name) throws Exception {
        Path file = dir.resolve(name).resolve("w.db");
        Files.createDirectories(file.getParent());
        long printed;
        try (ChildJvm child = new ChildJvm(file)) {
            assertThat(child.nextLine(30_000)).isEqualTo("OPENED CREATED 0");
            String line = child.nextLine(30_000);
            assertThat(line).as("the writer's first commit; its stderr:%n%s", child.stderrTail()).isNotNull();
            for (int i = 0; i < 200; i++) {
                String next = child.nextLine(5_000);
                if (next == null) {
                    break;
                }
                line = next;
            }
            String last = child.kill();
            printed = Long.parseLong(last != null ? last : line);
        }
        Path journal = only(file, StoreFiles.JOURNAL);
        // Generation 1 on an empty checkpoint (the journal stays far below the checkpoint size): record k is commit k.
        assertThat(journal.getFileName().toString()).endsWith(StoreFiles.JOURNAL + "1");
        List<Span> records = wholeRecords(journal);
        assertThat((long) records.size()).as("whole records: every commit reported, perhaps the one the kill came before reporting")
                .isBetween(printed, printed + 1);
        assertThat(records.size()).as("commits before the kill").isGreaterThanOrEqualTo(4);
        return new Crashed(file, journal, records);
    }

    /**
     * A journal cut anywhere after its header reopens with exactly the commits whose records lie whole before the
     * cut: none lost, nothing of the cut one, nothing after (CrashModel checks every row, the watermark and the
     * offsets). A cut into the header, or a deleted journal, rebuilds.
     */
    @Test
    void aJournalCutAnywhereReopensWithExactlyTheWholeRecordsBeforeTheCut() throws Exception {
        Crashed w = crashedWriter("cut");
        List<Span> records = w.records();
        int whole = records.size();
        long size = size(w.journal());
        assertReopensWith(copyOf(w.file(), "uncut"), whole, "the crashed writer's journal, uncut");
        Span middle = records.get(whole / 2);
        Span next = records.get(whole / 2 + 1);
        Span largest = records.stream().max(Comparator.comparingLong(Span::payload)).orElseThrow();
        // At the header's end, at a record boundary, into the next record's header and payload, one byte short of
        // its end, into the largest record (the bulk load), half way, and one byte short of the file's end.
        long[] cuts = {JOURNAL_HEADER, middle.end(), middle.end() + 1, middle.end() + RECORD_HEADER - 1, middle.end() + RECORD_HEADER,
                middle.end() + RECORD_HEADER + 1, next.end() - 1, largest.start() + RECORD_HEADER + largest.payload() / 2, size / 2, size - 1};
        for (int i = 0; i < cuts.length; i++) {
            long cut = cuts[i];
            Path copy = copyOf(w.file(), "cut-" + i);
            truncate(only(copy, StoreFiles.JOURNAL), cut);
            assertReopensWith(copy, wholeBefore(records, cut), "journal of " + size + " bytes cut at " + cut);
        }
        Path headerCut = copyOf(w.file(), "cut-into-header");
        Path journal = only(headerCut, StoreFiles.JOURNAL);
        truncate(journal, JOURNAL_HEADER - 8);
        assertRebuilt(headerCut, "the journal " + journal.getFileName() + " has no complete header", "journal cut into its header");
        Path lost = copyOf(w.file(), "journal-deleted");
        journal = only(lost, StoreFiles.JOURNAL);
        delete(journal);
        assertRebuilt(lost, "the manifest names journal " + journal.getFileName() + ", which does not exist", "the crashed writer's journal deleted");
    }

    /**
     * A flipped byte in the journal's header, or in a record a whole record follows, is damage: REBUILT, naming the
     * record. In the last whole record it cannot be told from an append a crash tore, so that one commit is dropped
     * and every earlier one kept; in a torn tail it drops nothing more.
     */
    @Test
    void aFlippedJournalByteRebuildsUnlessItIsInTheLastWholeRecord() throws Exception {
        Crashed w = crashedWriter("flip");
        List<Span> records = w.records();
        int whole = records.size();
        long size = size(w.journal());
        Span first = records.get(0);
        Span middle = records.get(whole / 2);
        Span last = records.get(whole - 1);
        // The header's magic, format, generation and checksum; a record's payload, length, checksum and sequence.
        List<Long> positions = new ArrayList<>(List.of(0L, 8L, 12L, 20L, first.start() + RECORD_HEADER + 1, middle.start(), middle.start() + 4,
                middle.start() + 8, middle.start() + RECORD_HEADER + middle.payload() / 2, last.start(), last.start() + RECORD_HEADER + last.payload() / 2));
        if (size > last.end()) {
            positions.add(last.end() + (size - last.end()) / 2);
        }
        long seed = Long.getLong("asof.test.seed", System.nanoTime());
        System.out.println("journal flip seed " + seed + " (rerun with -Dasof.test.seed=" + seed + ")");
        Random rnd = new Random(seed);
        for (int i = 0; i < 10; i++) {
            positions.add((long) (rnd.nextDouble() * size));
        }
        for (int i = 0; i < positions.size(); i++) {
            long pos = positions.get(i);
            Path copy = copyOf(w.file(), "flip-" + i);
            Path journal = only(copy, StoreFiles.JOURNAL);
            flip(journal, pos);
            String what = "journal byte " + pos + " of " + size + " flipped (seed " + seed + ")";
            int in = 0;
            while (in < whole && records.get(in).end() <= pos) {
                in++;
            }
            if (pos < JOURNAL_HEADER) {
                assertRebuilt(copy, "the journal " + journal.getFileName() + " has a damaged header", what);
            } else if (in < whole - 1) {
                assertRebuilt(copy, "journal record " + (in + 1) + " fails its checksum and valid records follow it", what);
            } else if (in == whole - 1) {
                assertReopensWith(copy, whole - 1, what + ": in the last whole record, dropped as a torn append");
            } else {
                assertReopensWith(copy, whole, what + ": in the torn tail");
            }
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
}
