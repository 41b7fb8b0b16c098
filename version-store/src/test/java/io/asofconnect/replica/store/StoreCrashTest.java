package io.asofconnect.replica.store;

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
 * A writer in a real separate JVM, SIGKILLed at random moments, many times over one store file: each
 * reopen must report REOPENED and hold exactly the committed prefix of the writer's deterministic sequence
 * (everything it reported committed, at most the one transaction whose commit finished before it could
 * report it, nothing half), and the next writer must continue from it. Never wrong data, and never an
 * intact file thrown away: a store that rebuilt (empty) after every crash would never serve wrong data either.
 * A rebuild counts only with proof of real damage (see below), and rebuilds must stay a small minority.
 */
class StoreCrashTest {
    /**
     * The reason a rebuild after a writer's damage report must carry. MapDB 3.1.0 can reopen a SIGKILLed WAL
     * store whose free-space lists are broken (commit 8310646): the data reads back correctly, so the test's
     * own check of that reopen passes, and only a later write fails, after which the store marks itself
     * damaged and the writer prints {@link StoreCrashWriter#DAMAGED}. The next open must then rebuild.
     */
    private static final String WRITE_DAMAGE = "marked damaged when it was last used: MapDB failed while writing";

    @TempDir
    Path dir;

    @Test
    void sigkillDuringPutAndCommitLoopsNeverLeavesWrongData() throws Exception {
        Path file = dir.resolve("crash.db");
        long seed = System.nanoTime();
        Random rnd = new Random(seed);
        long deadline = System.nanoTime() + 40_000_000_000L;
        int iterations = 0;
        List<String> rebuilds = new ArrayList<>();
        // What the store held at the test's last check: the writer must continue from exactly there.
        long committed = 0;
        long maxSeq = 0;
        while (System.nanoTime() < deadline || iterations < 5) {
            iterations++;
            String lastPrinted;
            try (ChildJvm child = new ChildJvm(file)) {
                String opened = child.nextLine(120_000);
                assertThat(opened).as("writer opened the store as the test left it (seed %s)", seed)
                        .isEqualTo("OPENED " + (iterations == 1 ? OpenOutcome.Kind.CREATED : OpenOutcome.Kind.REOPENED) + " " + committed);
                // Generous: a cold JVM plus a WAL replay on a loaded 2-core machine; a hang still fails, with its stderr.
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
            try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
                OpenOutcome outcome = store.openOutcome();
                if (StoreCrashWriter.DAMAGED.equals(lastPrinted)) {
                    // Damage found on write must never be served: the next open rebuilds, saying why.
                    assertThat(outcome.kind()).as("open after a writer found damage (seed %s)", seed).isEqualTo(OpenOutcome.Kind.REBUILT);
                    assertThat(outcome.reason()).as("why it was rebuilt (seed %s)", seed).startsWith(WRITE_DAMAGE);
                    assertThat(outcome.quarantined().map(Files::exists)).contains(true);
                    assertThat(CrashModel.assertCommittedPrefix(store)).isZero();
                    rebuilds.add(outcome.reason());
                    committed = 0;
                    continue;
                }
                if (outcome.kind() == OpenOutcome.Kind.REBUILT) {
                    // A SIGKILL can also leave a file MapDB 3.1.0 opens but whose B-tree nodes no longer decode
                    // (seen on young files: 3 in 334 kills within the first few dozen commits). That is real
                    // damage, but only if MapDB alone cannot read the file that was moved aside either.
                    Path aside = outcome.quarantined().orElseThrow();
                    assertThat(PlainMapDb.readFailure(aside)).as("the rebuilt file reads back whole with plain MapDB, so it was"
                            + " intact and must have reopened with its data (seed %s, reason %s)", seed, outcome.reason()).isPresent();
                    assertThat(CrashModel.assertCommittedPrefix(store)).isZero();
                    rebuilds.add(outcome.reason());
                    committed = 0;
                    continue;
                }
                assertThat(outcome.kind()).as("the crashed file was intact, so it reopens with its data (seed %s, reason %s)",
                        seed, outcome.reason()).isEqualTo(OpenOutcome.Kind.REOPENED);
                long printed = Long.parseLong(lastPrinted);
                committed = CrashModel.assertCommittedPrefix(store);
                assertThat(committed).as("committed sequence vs last reported %s (seed %s)", printed, seed)
                        .isBetween(printed, printed + 1);
                maxSeq = Math.max(maxSeq, committed);
            }
        }
        assertThat(iterations).isGreaterThanOrEqualTo(5);
        assertThat(maxSeq).isPositive();
        // Both MapDB faults are rare (no rebuild in 143 kills of a long-lived file, 3 in 334 kills of young
        // files, when this bound was set); a store that rebuilt after most crashes, or marked itself damaged
        // on most reopens, would be well past one kill in ten.
        assertThat(rebuilds).as("rebuilds in %s kills (seed %s)", iterations, seed).hasSizeLessThanOrEqualTo(Math.max(1, iterations / 10));
        System.out.printf("crash loop: %d kills, %d rebuilt %s, reached sequence %d (seed %d)%n", iterations, rebuilds.size(), rebuilds, maxSeq, seed);
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
