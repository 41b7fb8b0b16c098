package io.asofconnect.store;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A writer in a real separate JVM, SIGKILLed at random moments, many times over one store: each reopen
 * must report REOPENED and hold exactly the committed prefix of the writer's deterministic sequence
 * (everything it reported committed, at most the one transaction whose commit finished before it could
 * report it, nothing half), and the next writer must continue from it. Never wrong data, and never an
 * intact store thrown away: a store that rebuilt (empty) after every crash would never serve wrong data
 * either. The only rebuild allowed is the one a writer announced by reporting damage it found.
 *
 * <p>Two writers in three checkpoint whenever their journal passes 2 KB, so kills land while a
 * checkpoint is written and while the manifest switches (counted, and required at least once); every writer makes bulk commits of
 * {@value StoreCrashWriter#BULK_KEYS} puts, so kills land inside a large journal append.
 */
class StoreCrashTest {
    /** The reason a rebuild after a writer's damage report must carry. */
    private static final String MARKED = "marked damaged when it was last used";
    private static final String FREQUENT_CHECKPOINTS = "checkpoint=2048";

    @TempDir
    Path dir;

    @Test
    void sigkillDuringPutCommitAndCheckpointReopensWithExactlyTheCommittedPrefix() throws Exception {
        Path file = dir.resolve("crash.db");
        long seed = System.nanoTime();
        Random rnd = new Random(seed);
        long deadline = System.nanoTime() + 40_000_000_000L;
        int iterations = 0;
        int checkpointing = 0;
        int midCheckpoint = 0;
        List<String> rebuilds = new ArrayList<>();
        // What the store held at the test's last check: the writer must continue from exactly there.
        long committed = 0;
        long maxSeq = 0;
        while (System.nanoTime() < deadline || iterations < 6) {
            iterations++;
            boolean frequentCheckpoints = iterations % 3 != 1;
            checkpointing += frequentCheckpoints ? 1 : 0;
            String lastPrinted;
            try (ChildJvm child = frequentCheckpoints ? new ChildJvm(file, FREQUENT_CHECKPOINTS) : new ChildJvm(file)) {
                String opened = child.nextLine(120_000);
                assertThat(opened).as("writer opened the store as the test left it (seed %s); its stderr:%n%s", seed, child.stderrTail())
                        .isEqualTo("OPENED " + (iterations == 1 ? OpenOutcome.Kind.CREATED : OpenOutcome.Kind.REOPENED) + " " + committed);
                // Generous: a cold JVM plus a journal replay on a loaded 2-core machine; a hang still fails, with its stderr.
                String first = child.nextLine(120_000);
                assertThat(first).as("writer committed once (seed %s, alive %s); its stderr:%n%s", seed, child.isAlive(), child.stderrTail()).isNotNull();
                if (!StoreCrashWriter.DAMAGED.equals(first)) {
                    // Kill anywhere from right after the first commit to a few hundred commits later.
                    long delay = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(300);
                    if (delay > 0) {
                        Thread.sleep(delay);
                    }
                }
                String last = child.kill();
                lastPrinted = last != null && !last.startsWith("OPENED") ? last : first;
            }
            // A settled store is one checkpoint and its journal; more files mean the kill hit a checkpoint or the switch after it.
            if (StoreFiles.dataFiles(file).size() > 2) {
                midCheckpoint++;
            }
            try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
                OpenOutcome outcome = store.openOutcome();
                if (StoreCrashWriter.DAMAGED.equals(lastPrinted)) {
                    // Damage found on write must never be served: the next open rebuilds, saying why.
                    assertThat(outcome.kind()).as("open after a writer found damage (seed %s)", seed).isEqualTo(OpenOutcome.Kind.REBUILT);
                    assertThat(outcome.reason()).as("why it was rebuilt (seed %s)", seed).startsWith(MARKED);
                    assertThat(outcome.quarantined().map(Files::exists)).contains(true);
                    assertThat(CrashModel.assertCommittedPrefix(store)).isZero();
                    rebuilds.add(outcome.reason());
                    committed = 0;
                    continue;
                }
                assertThat(outcome.kind()).as("the crashed store was intact, so it reopens with its data (seed %s, reason %s)",
                        seed, outcome.reason()).isEqualTo(OpenOutcome.Kind.REOPENED);
                long printed = Long.parseLong(lastPrinted);
                committed = CrashModel.assertCommittedPrefix(store);
                assertThat(committed).as("committed sequence vs last reported %s (seed %s)", printed, seed)
                        .isBetween(printed, printed + 1);
                maxSeq = Math.max(maxSeq, committed);
            }
        }
        assertThat(iterations).isGreaterThanOrEqualTo(6);
        assertThat(midCheckpoint).as("kills that landed inside a checkpoint or generation switch (seed %s)", seed).isPositive();
        assertThat(maxSeq).as("reached at least one bulk commit").isGreaterThanOrEqualTo(StoreCrashWriter.BULK_EVERY);
        // No known fault of this layout damages a store on a kill: a rebuild is a failure unless a writer reported damage.
        assertThat(rebuilds).as("rebuilds in %s kills (seed %s)", iterations, seed).isEmpty();
        System.out.printf("crash loop: %d kills (%d with frequent checkpoints, %d inside a checkpoint or switch), %d rebuilt %s,"
                + " reached sequence %d (seed %d)%n", iterations, checkpointing, midCheckpoint, rebuilds.size(), rebuilds, maxSeq, seed);
    }

    @Test
    void storeHeldByAnotherJvmIsLockedNotQuarantined() throws Exception {
        Path file = dir.resolve("locked.db");
        try (ChildJvm child = new ChildJvm(file)) {
            assertThat(child.nextLine(30_000)).startsWith("OPENED");
            assertThat(child.nextLine(30_000)).isNotNull();
            assertThatThrownBy(() -> MapDbVersionStore.open(file, StoreOptions.defaults()))
                    .isInstanceOf(StoreLockedException.class).hasMessageContaining("locked.db").hasMessageContaining("replica.path");
            try (var files = Files.list(dir)) {
                assertThat(files.map(p -> p.getFileName().toString())).noneMatch(n -> n.contains("quarantined"));
            }
            child.kill();
        }
        try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
            assertThat(store.openOutcome().kind()).as("the OS released the dead writer's lock").isEqualTo(OpenOutcome.Kind.REOPENED);
            assertThat(CrashModel.assertCommittedPrefix(store)).as("the dead writer's commits").isPositive();
        }
    }
}
