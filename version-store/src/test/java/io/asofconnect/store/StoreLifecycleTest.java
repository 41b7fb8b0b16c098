package io.asofconnect.store;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class StoreLifecycleTest {
    private static final String T = "public.items";
    @TempDir
    Path dir;

    private MapDbVersionStore open() {
        return MapDbVersionStore.open(dir.resolve("s.db"), StoreOptions.defaults());
    }

    private static Version v(long validFrom, long lsn, long value) {
        return new Version(validFrom, new SourcePosition(lsn, 0), TestRows.row(1, value, false));
    }

    private static ByteBuffer buf(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void createdThenReopenedKeepsEverythingCommitted() {
        try (MapDbVersionStore s = open()) {
            assertThat(s.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.CREATED);
            assertThat(s.watermark()).isEqualTo(Long.MIN_VALUE);
            assertThat(s.historyStart()).isEqualTo(Long.MIN_VALUE);
            s.put(T, RowKey.of(1), v(10, 1, 100));
            s.put(T, RowKey.of(1), Version.tombstone(20, new SourcePosition(2, 0)));
            s.put("public.other", RowKey.of(1), v(10, 3, 7));
            s.putOffset(buf("k"), buf("v1"));
            s.setWatermark(25);
            s.setMeta("slot", "asof_slot");
            s.setHistoryStart(5);
            assertThat(s.watermark()).as("watermark is the committed one").isEqualTo(Long.MIN_VALUE);
            s.commit();
            assertThat(s.watermark()).isEqualTo(25);
        }
        try (MapDbVersionStore s = open()) {
            assertThat(s.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.REOPENED);
            assertThat(s.history(T, RowKey.of(1))).containsExactly(v(10, 1, 100), Version.tombstone(20, new SourcePosition(2, 0)));
            assertThat(s.floor(T, RowKey.of(1), 19)).contains(v(10, 1, 100));
            assertThat(s.floor(T, RowKey.of(1), 9)).isEmpty();
            assertThat(s.latest(T, RowKey.of(1)).orElseThrow().isTombstone()).isTrue();
            assertThat(s.find(T, RowKey.of(1), new VersionId(10, new SourcePosition(1, 0)))).contains(v(10, 1, 100));
            assertThat(s.find(T, RowKey.of(1), new VersionId(10, new SourcePosition(1, 1)))).isEmpty();
            assertThat(s.offsets()).containsEntry(buf("k"), buf("v1")).hasSize(1);
            assertThat(s.watermark()).isEqualTo(25);
            assertThat(s.historyStart()).isEqualTo(5);
            assertThat(s.meta("slot")).contains("asof_slot");
            assertThat(s.meta("nope")).isEmpty();
        }
    }

    @Test
    void rollbackDiscardsEverySinceTheLastCommit() {
        try (MapDbVersionStore s = open()) {
            s.put(T, RowKey.of(1), v(10, 1, 100));
            s.putOffset(buf("k"), buf("v1"));
            s.setWatermark(10);
            s.commit();
            s.put(T, RowKey.of(1), v(20, 2, 200));
            s.put(T, RowKey.of(2), new Version(5, new SourcePosition(9, 0), TestRows.row(2, 1, true)));
            s.putOffset(buf("k"), buf("v2"));
            s.setWatermark(20);
            s.setHistoryStart(3);
            s.rollback();
            assertThat(s.history(T, RowKey.of(1))).containsExactly(v(10, 1, 100));
            assertThat(s.latest(T, RowKey.of(2))).isEmpty();
            assertThat(s.offsets()).containsEntry(buf("k"), buf("v1"));
            assertThat(s.watermark()).isEqualTo(10);
            assertThat(s.historyStart()).isEqualTo(Long.MIN_VALUE);
            // The schema registered in the rolled-back transaction must be registered again, not assumed present.
            s.put(T, RowKey.of(2), new Version(5, new SourcePosition(9, 0), TestRows.row(2, 1, true)));
            s.commit();
        }
        try (MapDbVersionStore s = open()) {
            assertThat(s.latest(T, RowKey.of(2)).orElseThrow().row()).isEqualTo(TestRows.row(2, 1, true));
        }
    }

    @Test
    void theFootprintCountsVersionsAndKeysThroughRollbackPruneAndReopen() {
        try (MapDbVersionStore s = open()) {
            assertThat(s.footprint().versions()).isZero();
            s.put(T, RowKey.of(1), v(10, 1, 100));
            s.put(T, RowKey.of(1), v(20, 2, 200));
            s.put(T, RowKey.of(1), v(20, 2, 200));
            s.put("public.other", RowKey.of(2), v(10, 3, 7));
            s.commit();
            assertThat(s.footprint().versions()).as("a replayed put replaces, never doubles").isEqualTo(3);
            assertThat(s.footprint().keys()).isEqualTo(2);
            assertThat(s.footprint().diskBytes()).isPositive();
            s.put(T, RowKey.of(3), v(30, 4, 300));
            assertThat(s.footprint().versions()).isEqualTo(4);
            s.rollback();
            assertThat(s.footprint().versions()).isEqualTo(3);
            assertThat(s.footprint().keys()).isEqualTo(2);
            assertThat(s.prune(25)).isEqualTo(1);
            s.commit();
            assertThat(s.footprint().versions()).isEqualTo(2);
        }
        try (MapDbVersionStore s = open()) {
            assertThat(s.footprint().versions()).isEqualTo(2);
            assertThat(s.footprint().keys()).isEqualTo(2);
        }
    }

    @Test
    void closeWithoutCommitDropsTheUncommittedWrites() {
        try (MapDbVersionStore s = open()) {
            s.put(T, RowKey.of(1), v(10, 1, 100));
            s.commit();
            s.put(T, RowKey.of(1), v(20, 2, 200));
            assertThat(s.latest(T, RowKey.of(1))).as("readers see the writer's puts").contains(v(20, 2, 200));
        }
        try (MapDbVersionStore s = open()) {
            assertThat(s.history(T, RowKey.of(1))).containsExactly(v(10, 1, 100));
        }
    }

    @Test
    void aTableFirstWrittenInARolledBackTransactionLeavesNothingBehind() {
        try (MapDbVersionStore s = open()) {
            s.setHistoryStart(0);
            s.commit();
            s.put("public.never", RowKey.of(1), v(10, 1, 100));
            // Closing rolls the put back, then checkpoints the committed journal: the checkpoint must not
            // name a table the rolled-back transaction created.
        }
        try (MapDbVersionStore s = open()) {
            assertThat(s.openOutcome().kind()).as("%s", s.openOutcome()).isEqualTo(OpenOutcome.Kind.REOPENED);
            assertThat(s.latest("public.never", RowKey.of(1))).isEmpty();
            assertThat(s.historyStart()).isZero();
            s.put(T, RowKey.of(1), v(10, 1, 100));
            s.commit();
        }
        try (MapDbVersionStore s = open()) {
            assertThat(s.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.REOPENED);
            assertThat(s.history(T, RowKey.of(1))).containsExactly(v(10, 1, 100));
        }
    }

    @Test
    void samePositionReplacesSameInstantOrdersByPosition() {
        try (MapDbVersionStore s = open()) {
            s.put(T, RowKey.of(1), v(10, 5, 1));
            s.put(T, RowKey.of(1), v(10, 3, 2));
            s.put(T, RowKey.of(1), v(10, 5, 3));
            assertThat(s.history(T, RowKey.of(1))).containsExactly(v(10, 3, 2), v(10, 5, 3));
            assertThat(s.floor(T, RowKey.of(1), 10)).contains(v(10, 5, 3));
            assertThat(s.floor(T, RowKey.of(1), Long.MAX_VALUE)).contains(v(10, 5, 3));
        }
    }

    @Test
    void keysAreListedPerTableInKeyOrder() {
        try (MapDbVersionStore s = open()) {
            for (String k : List.of("b", "a", "c")) {
                s.put(T, RowKey.of(k, 1), v(1, 1, 1));
                s.put(T, RowKey.of(k, 1), v(2, 2, 1));
            }
            s.put("public.itemz", RowKey.of("z"), v(1, 1, 1));
            s.put("public.item", RowKey.of("y"), v(1, 1, 1));
            assertThat(s.keys(T)).containsExactly(RowKey.of("a", 1), RowKey.of("b", 1), RowKey.of("c", 1));
            assertThat(s.keys("public.none")).isEmpty();
        }
    }

    @Test
    void pruneKeepsTheAnswerAtTheHorizonAndDropsOldTombstones() {
        try (MapDbVersionStore s = open()) {
            RowKey a = RowKey.of("a");
            RowKey b = RowKey.of("b");
            s.put(T, a, v(1, 1, 1));
            s.put(T, a, v(2, 2, 2));
            s.put(T, a, v(5, 3, 5));
            s.put(T, b, v(1, 4, 1));
            s.put(T, b, Version.tombstone(3, new SourcePosition(5, 0)));
            assertThat(s.prune(4)).isEqualTo(3);
            assertThat(s.history(T, a)).containsExactly(v(2, 2, 2), v(5, 3, 5));
            assertThat(s.history(T, b)).isEmpty();
            assertThat(s.historyStart()).isEqualTo(4);
            assertThat(s.prune(2)).isZero();
            assertThat(s.historyStart()).as("never lowered by prune").isEqualTo(4);
        }
    }

    @Test
    void readsOfAClosedStoreFail() {
        MapDbVersionStore s = open();
        s.put(T, RowKey.of(1), v(10, 1, 100));
        s.commit();
        s.close();
        assertThatThrownBy(() -> s.floor(T, RowKey.of(1), 10)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> s.latest(T, RowKey.of(1))).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(s::offsets).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void reservedMetaKeysAreRejected() {
        try (MapDbVersionStore s = open()) {
            assertThatThrownBy(() -> s.setMeta("store.watermark", "1")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("store.watermark");
        }
    }

    @Test
    void secondOpenInTheSameJvmIsLockedAndQuarantinesNothing() throws Exception {
        try (MapDbVersionStore s = open()) {
            s.put(T, RowKey.of(1), v(10, 1, 100));
            s.commit();
            assertThatThrownBy(this::open).isInstanceOf(StoreLockedException.class)
                    .hasMessageContaining("s.db").hasMessageContaining("replica.path");
            assertThat(s.latest(T, RowKey.of(1))).contains(v(10, 1, 100));
        }
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).noneMatch(n -> n.contains("quarantined"));
        }
        try (MapDbVersionStore s = open()) {
            assertThat(s.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.REOPENED);
            assertThat(s.latest(T, RowKey.of(1))).contains(v(10, 1, 100));
        }
    }

    @Test
    void dataFilesWithoutTheirManifestAreQuarantined() throws Exception {
        try (MapDbVersionStore s = open()) {
            s.put(T, RowKey.of(1), v(10, 1, 100));
            s.commit();
        }
        Files.delete(dir.resolve("s.db"));
        try (MapDbVersionStore s = open()) {
            assertThat(s.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.REBUILT);
            assertThat(s.latest(T, RowKey.of(1))).isEmpty();
            // The closed store's newest generation (its close compacted the journal into checkpoint 2) moved aside too.
            assertThat(Files.exists(Path.of(s.openOutcome().quarantined().orElseThrow() + ".checkpoint-2"))).isTrue();
            assertThat(Files.exists(Path.of(s.openOutcome().quarantined().orElseThrow() + ".journal-2"))).isTrue();
        }
    }

    @Test
    void foreignFileIsQuarantined() throws Exception {
        Files.writeString(dir.resolve("s.db"), "this is not a MapDB file at all, just text");
        try (MapDbVersionStore s = open()) {
            assertThat(s.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.REBUILT);
            Path aside = s.openOutcome().quarantined().orElseThrow();
            assertThat(Files.readString(aside)).startsWith("this is not");
            s.put(T, RowKey.of(1), v(10, 1, 100));
            s.commit();
        }
        try (MapDbVersionStore s = open()) {
            assertThat(s.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.REOPENED);
        }
    }
}
