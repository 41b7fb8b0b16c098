package io.asofconnect.store;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A writer in a real separate JVM, SIGKILLed at random moments, many times over one store file: each
 * reopen must hold exactly the committed prefix of the writer's deterministic sequence (everything it
 * reported committed, at most the one transaction whose commit finished before it could report it,
 * nothing half), or report REBUILT. Never wrong data.
 */
class StoreCrashTest {
    @TempDir
    Path dir;

    @Test
    void sigkillDuringPutAndCommitLoopsNeverLeavesWrongData() throws Exception {
        Path file = dir.resolve("crash.db");
        long seed = System.nanoTime();
        Random rnd = new Random(seed);
        long deadline = System.nanoTime() + 40_000_000_000L;
        int iterations = 0;
        int rebuilt = 0;
        long maxSeq = 0;
        while (System.nanoTime() < deadline || iterations < 5) {
            iterations++;
            String lastPrinted;
            try (ChildJvm child = new ChildJvm(file)) {
                String opened = child.nextLine(120_000);
                assertThat(opened).as("writer started (seed %s)", seed).startsWith("OPENED");
                // Generous: a cold JVM plus a WAL replay on a loaded 2-core machine; a hang still fails, with its stderr.
                String first = child.nextLine(120_000);
                assertThat(first).as("writer committed once (seed %s, alive %s); its stderr:%n%s", seed, child.isAlive(), child.stderrTail()).isNotNull();
                if (StoreCrashWriter.DAMAGED.equals(first)) {
                    child.kill();
                    // Damage found on write must never be served: the next open rebuilds.
                    try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
                        assertThat(store.openOutcome().kind()).as("open after a writer found damage (seed %s)", seed)
                                .isEqualTo(OpenOutcome.Kind.REBUILT);
                        assertThat(CrashModel.assertCommittedPrefix(store)).isZero();
                    }
                    rebuilt++;
                    continue;
                }
                // Kill anywhere from right after the first commit to a few hundred commits later.
                long delay = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(300);
                if (delay > 0) {
                    Thread.sleep(delay);
                }
                String last = child.kill();
                lastPrinted = last != null && !last.startsWith("OPENED") ? last : first;
            }
            boolean damaged = StoreCrashWriter.DAMAGED.equals(lastPrinted);
            long printed = damaged ? -1 : Long.parseLong(lastPrinted);
            try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
                if (damaged) {
                    assertThat(store.openOutcome().kind()).as("open after a writer found damage (seed %s)", seed)
                            .isEqualTo(OpenOutcome.Kind.REBUILT);
                }
                if (store.openOutcome().kind() == OpenOutcome.Kind.REBUILT) {
                    rebuilt++;
                    assertThat(store.openOutcome().quarantined().map(Files::exists)).contains(true);
                    assertThat(CrashModel.assertCommittedPrefix(store)).isZero();
                    continue;
                }
                assertThat(store.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.REOPENED);
                long committed = CrashModel.assertCommittedPrefix(store);
                assertThat(committed).as("committed sequence vs last reported %s (seed %s)", printed, seed)
                        .isBetween(printed, printed + 1);
                maxSeq = Math.max(maxSeq, committed);
            }
        }
        assertThat(iterations).isGreaterThanOrEqualTo(5);
        assertThat(maxSeq).isPositive();
        System.out.printf("crash loop: %d kills, %d rebuilt, reached sequence %d (seed %d)%n", iterations, rebuilt, maxSeq, seed);
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
            CrashModel.assertCommittedPrefix(store);
        }
    }
}
