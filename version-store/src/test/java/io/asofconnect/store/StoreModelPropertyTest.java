package io.asofconnect.store;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Random sequences of writes, prunes, commits, rollbacks and reopens against a plain in-memory model
 * (a TreeMap of versions per key, plus a committed copy): every floor / latest / find / history and
 * must agree with the model. The lookup rules over a store are the replica's ({@code StoreBackedLookupPropertyTest}).
 */
class StoreModelPropertyTest {
    private static final String T = "public.items";
    private static final int KEYS = 4;
    private static final int MAX_TIME = 12;

    sealed interface Action {
    }

    record Put(int key, long validFrom, long lsn, int ordinal, boolean tombstone, long value, boolean newShape) implements Action {
    }

    record Prune(long horizon) implements Action {
    }

    record SetWatermark(long watermark) implements Action {
    }

    record Commit() implements Action {
    }

    record Rollback() implements Action {
    }

    record Reopen() implements Action {
    }

    /** One key's versions ordered by (valid-from, position), as the store orders them. */
    private static final Comparator<VersionId> ORDER = Comparator.comparingLong(VersionId::validFrom).thenComparing(VersionId::position);

    private static final class Model {
        Map<Integer, TreeMap<VersionId, Version>> data = new TreeMap<>();
        long historyStart = Long.MIN_VALUE;
        long watermark = Long.MIN_VALUE;

        Model copy() {
            Model m = new Model();
            data.forEach((k, v) -> m.data.put(k, new TreeMap<>(v)));
            m.historyStart = historyStart;
            m.watermark = watermark;
            return m;
        }

        TreeMap<VersionId, Version> of(int key) {
            return data.computeIfAbsent(key, k -> new TreeMap<>(ORDER));
        }

        Optional<Version> floor(int key, long t) {
            Map.Entry<VersionId, Version> e = of(key).floorEntry(new VersionId(t, SourcePosition.MAX));
            return Optional.ofNullable(e).map(Map.Entry::getValue);
        }

        void prune(long horizon) {
            for (TreeMap<VersionId, Version> versions : data.values()) {
                List<VersionId> before = new ArrayList<>(versions.headMap(new VersionId(horizon, SourcePosition.MIN)).keySet());
                if (before.isEmpty()) {
                    continue;
                }
                VersionId newest = before.get(before.size() - 1);
                int keep = versions.get(newest).isTombstone() ? 0 : 1;
                for (int i = 0; i < before.size() - keep; i++) {
                    versions.remove(before.get(i));
                }
            }
            historyStart = Math.max(historyStart, horizon);
        }
    }

    @Provide
    Arbitrary<List<Action>> actions() {
        Arbitrary<Action> put = Combinators.combine(
                Arbitraries.integers().between(0, KEYS - 1),
                Arbitraries.longs().between(0, MAX_TIME),
                Arbitraries.longs().between(1, 4),
                Arbitraries.integers().between(0, 1),
                Arbitraries.of(false, false, false, true),
                Arbitraries.longs().between(-1000, 1000),
                Arbitraries.of(false, true)).as(Put::new);
        Arbitrary<Action> prune = Arbitraries.longs().between(0, MAX_TIME).map(Prune::new);
        Arbitrary<Action> watermark = Arbitraries.longs().between(0, MAX_TIME + 2).map(SetWatermark::new);
        Arbitrary<Action> action = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(10, put),
                net.jqwik.api.Tuple.of(1, prune),
                net.jqwik.api.Tuple.of(2, watermark),
                net.jqwik.api.Tuple.of(3, Arbitraries.just(new Commit())),
                net.jqwik.api.Tuple.of(1, Arbitraries.just(new Rollback())),
                net.jqwik.api.Tuple.of(1, Arbitraries.just(new Reopen())));
        return action.list().ofMinSize(1).ofMaxSize(60);
    }

    @Property(tries = 300)
    void storeAgreesWithTheModel(@ForAll("actions") List<Action> actions) throws IOException {
        Path dir = Files.createTempDirectory("store-prop");
        Path file = dir.resolve("p.db");
        MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults().withVerification(StoreOptions.Verification.FULL));
        try {
            Model pending = new Model();
            Model committed = pending.copy();
            for (Action a : actions) {
                if (a instanceof Put p) {
                    Version v = p.tombstone()
                            ? Version.tombstone(p.validFrom(), new SourcePosition(p.lsn(), p.ordinal()))
                            : new Version(p.validFrom(), new SourcePosition(p.lsn(), p.ordinal()), TestRows.row(p.key(), p.value(), p.newShape()));
                    store.put(T, RowKey.of(p.key()), v);
                    pending.of(p.key()).put(v.id(), v);
                } else if (a instanceof Prune p) {
                    assertThat(store.prune(p.horizon())).isEqualTo(countPrunable(pending, p.horizon()));
                    pending.prune(p.horizon());
                } else if (a instanceof SetWatermark w) {
                    store.setWatermark(w.watermark());
                    pending.watermark = w.watermark();
                } else if (a instanceof Commit) {
                    store.commit();
                    committed = pending.copy();
                } else if (a instanceof Rollback) {
                    store.rollback();
                    pending = committed.copy();
                } else if (a instanceof Reopen) {
                    store.close();
                    store = MapDbVersionStore.open(file, StoreOptions.defaults().withVerification(StoreOptions.Verification.FULL));
                    assertThat(store.openOutcome().kind()).as("open outcome: %s", store.openOutcome()).isEqualTo(OpenOutcome.Kind.REOPENED);
                    pending = committed.copy();
                }
                assertAgrees(store, pending, committed);
            }
        } finally {
            store.close();
            deleteAll(dir);
        }
    }

    private static long countPrunable(Model m, long horizon) {
        Model c = m.copy();
        long before = c.data.values().stream().mapToLong(Map::size).sum();
        c.prune(horizon);
        return before - c.data.values().stream().mapToLong(Map::size).sum();
    }

    private static void assertAgrees(VersionStore store, Model pending, Model committed) {
        assertThat(store.historyStart()).isEqualTo(pending.historyStart);
        assertThat(store.watermark()).isEqualTo(committed.watermark);
        List<RowKey> expectedKeys = new ArrayList<>();
        for (int k = 0; k < KEYS; k++) {
            RowKey key = RowKey.of(k);
            TreeMap<VersionId, Version> versions = pending.of(k);
            if (!versions.isEmpty()) {
                expectedKeys.add(key);
            }
            assertThat(store.history(T, key)).containsExactlyElementsOf(versions.values());
            assertThat(store.latest(T, key)).isEqualTo(Optional.ofNullable(versions.isEmpty() ? null : versions.lastEntry().getValue()));
            for (long t = -1; t <= MAX_TIME + 1; t++) {
                Optional<Version> expected = pending.floor(k, t);
                assertThat(store.floor(T, key, t)).as("floor key %s t %s", k, t).isEqualTo(expected);
            }
            for (Version v : versions.values()) {
                assertThat(store.find(T, key, v.id())).contains(v);
            }
            assertThat(store.find(T, key, new VersionId(MAX_TIME + 5, new SourcePosition(1, 0)))).isEmpty();
        }
        assertThat(store.keys(T)).containsExactlyElementsOf(expectedKeys.stream().sorted().toList());
    }

    private static void deleteAll(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.delete(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
