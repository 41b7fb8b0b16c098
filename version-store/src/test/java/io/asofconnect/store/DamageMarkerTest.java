package io.asofconnect.store;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** A store that found itself damaged while open is rebuilt on the next open, never trusted again. */
class DamageMarkerTest {
    @TempDir
    Path dir;

    @Test
    void aStoreMarkedDamagedIsQuarantinedAndRebuiltOnTheNextOpen() {
        Path file = dir.resolve("marked.db");
        try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
            store.put("public.t", RowKey.of(1), new Version(10, new SourcePosition(1, 0), TestRows.row(1, 1, true)));
            store.commit();
        }
        Quarantine.markDamaged(file, "test: free-space list broken");
        try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
            assertThat(store.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.REBUILT);
            assertThat(store.openOutcome().reason()).contains("free-space list broken");
            assertThat(store.latest("public.t", RowKey.of(1))).isEmpty();
        }
        assertThat(Files.exists(Quarantine.damagedMarker(file))).isFalse();
        try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
            assertThat(store.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.REOPENED);
        }
    }
}
