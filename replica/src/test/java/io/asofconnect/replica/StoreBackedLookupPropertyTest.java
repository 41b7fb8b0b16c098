package io.asofconnect.replica;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.replica.watermark.WatermarkTracker;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.StoreOptions;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Random writes, prunes and committed watermarks against a store: every answer of {@link StoreBackedLookup}
 * must be the one the lookup rules give, computed here from a plain list of the versions written and a
 * watermark modelled in the test (the greatest committed so far: readers never see it go back).
 */
class StoreBackedLookupPropertyTest {
    private static final String T = "public.items";
    private static final int KEYS = 3;
    private static final int MAX_TIME = 10;
    private static final Schema ROW = SchemaBuilder.struct().name("test.public.items.Value")
            .field("id", Schema.INT64_SCHEMA).field("value", Schema.INT64_SCHEMA).build();

    sealed interface Action {
    }

    record Put(int key, long validFrom, long lsn, boolean tombstone, long value) implements Action {
    }

    record Prune(long horizon) implements Action {
    }

    record Commit(long watermark) implements Action {
    }

    /** A version the test wrote, with the key it wrote it to. */
    record Written(int key, Version version) {
    }

    @Provide
    Arbitrary<List<Action>> actions() {
        Arbitrary<Action> put = Combinators.combine(
                Arbitraries.integers().between(0, KEYS - 1),
                Arbitraries.longs().between(0, MAX_TIME),
                Arbitraries.longs().between(1, 1_000),
                Arbitraries.of(false, false, false, true),
                Arbitraries.longs().between(-100, 100)).as(Put::new);
        Arbitrary<Action> prune = Arbitraries.longs().between(0, MAX_TIME).map(Prune::new);
        Arbitrary<Action> commit = Arbitraries.longs().between(0, MAX_TIME + 2).map(Commit::new);
        return Arbitraries.frequencyOf(Tuple.of(8, put), Tuple.of(1, prune), Tuple.of(3, commit))
                .list().ofMinSize(1).ofMaxSize(50);
    }

    @Property(tries = 200)
    void lookupAnswersAsTheRulesSay(@ForAll("actions") List<Action> actions) throws IOException {
        Path dir = Files.createTempDirectory("lookup-prop");
        MapDbVersionStore store = MapDbVersionStore.open(dir.resolve("p.db"), StoreOptions.defaults());
        try {
            WatermarkTracker tracker = new WatermarkTracker(Long.MIN_VALUE);
            StoreBackedLookup lookup = new StoreBackedLookup(store, tracker, Set.of(T));
            List<Written> written = new ArrayList<>();
            long visible = Long.MIN_VALUE;
            long historyStart = Long.MIN_VALUE;
            int puts = 0;
            for (Action a : actions) {
                if (a instanceof Put p) {
                    // Distinct positions, so that no two versions of a key share an id (a second put of one id
                    // replaces the first in the store); counted apart from the list, which a prune shortens.
                    int ordinal = puts++;
                    Version v = p.tombstone()
                            ? Version.tombstone(p.validFrom(), new SourcePosition(p.lsn(), ordinal))
                            : new Version(p.validFrom(), new SourcePosition(p.lsn(), ordinal),
                                    new Struct(ROW).put("id", (long) p.key()).put("value", p.value()));
                    store.put(T, RowKey.of(p.key()), v);
                    written.add(new Written(p.key(), v));
                } else if (a instanceof Prune p) {
                    store.prune(p.horizon());
                    prune(written, p.horizon());
                    historyStart = Math.max(historyStart, p.horizon());
                } else if (a instanceof Commit c) {
                    store.setWatermark(c.watermark());
                    store.commit();
                    tracker.advanceTo(c.watermark());
                    visible = Math.max(visible, c.watermark());
                }
                assertAnswers(lookup, written, visible, historyStart);
            }
        } finally {
            store.close();
            try (var files = Files.walk(dir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    private static void assertAnswers(StoreBackedLookup lookup, List<Written> written, long visible, long historyStart) {
        for (int k = 0; k < KEYS; k++) {
            RowKey key = RowKey.of(k);
            for (long t = -1; t <= MAX_TIME + 2; t++) {
                LookupResult expected;
                if (t > visible) {
                    expected = new LookupResult.NotYetVisible(visible);
                } else if (t < historyStart) {
                    expected = new LookupResult.OutOfHistory(historyStart);
                } else {
                    expected = ruled(floor(written, k, t));
                }
                assertThat(lookup.asOf(T, key, t)).as("asOf key %s t %s", k, t).isEqualTo(expected);
            }
            assertThat(lookup.current(T, key)).as("current key %s", k).isEqualTo(ruled(floor(written, k, Long.MAX_VALUE)));
            for (Written w : written) {
                VersionId id = w.version().id();
                if (w.key() == k) {
                    LookupResult expected = id.validFrom() > visible ? new LookupResult.NotYetVisible(visible) : ruled(w.version());
                    assertThat(lookup.exact(T, key, id)).as("exact %s", id).isEqualTo(expected);
                }
            }
            VersionId never = new VersionId(MAX_TIME + 1, new SourcePosition(Long.MAX_VALUE - 1, 0));
            assertThat(lookup.exact(T, key, never)).isEqualTo(MAX_TIME + 1 > visible
                    ? new LookupResult.NotYetVisible(visible) : LookupResult.NO_VERSION);
        }
        assertThat(lookup.asOf("public.unknown", RowKey.of(1), 0)).isEqualTo(new LookupResult.UnknownTable("public.unknown"));
    }

    /**
     * Retention as the store promises it: per key, of the versions valid from before {@code horizon}, only the
     * newest is kept, and only if it is not a tombstone (it still answers times from the horizon on).
     */
    private static void prune(List<Written> written, long horizon) {
        for (int k = 0; k < KEYS; k++) {
            Version newestBefore = null;
            for (Written w : written) {
                Version v = w.version();
                if (w.key() == k && v.validFrom() < horizon && (newestBefore == null || later(v, newestBefore))) {
                    newestBefore = v;
                }
            }
            Version keep = newestBefore == null || newestBefore.isTombstone() ? null : newestBefore;
            int key = k;
            written.removeIf(w -> w.key() == key && w.version().validFrom() < horizon && w.version() != keep);
        }
    }

    private static boolean later(Version a, Version b) {
        return a.validFrom() > b.validFrom()
                || (a.validFrom() == b.validFrom() && a.id().position().compareTo(b.id().position()) > 0);
    }

    /** The version of {@code key} valid at {@code t}: greatest valid-from at or before it, then the later source position. */
    private static Version floor(List<Written> written, int key, long t) {
        Version best = null;
        for (Written w : written) {
            Version v = w.version();
            if (w.key() != key || v.validFrom() > t) {
                continue;
            }
            if (best == null || later(v, best)) {
                best = v;
            }
        }
        return best;
    }

    private static LookupResult ruled(Version v) {
        if (v == null) {
            return LookupResult.NO_VERSION;
        }
        return v.isTombstone() ? new LookupResult.Absent(v) : new LookupResult.Found(v);
    }
}
