package io.asofconnect.store;

import io.asofconnect.common.lookup.Change;
import io.asofconnect.common.lookup.IndexDeclaration;
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
import net.jqwik.api.Tuple;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Random puts over two feed tables and one plain table (several versions per key, snapshot rows sharing one
 * version id across keys and tables, tombstones, one valid-from at several positions, replays at a position),
 * with commits, rollbacks, prunes, reopens (checkpoint load), crash reopens (journal replay, with and without
 * frequent checkpoints): the store's change feed and indexes must equal brute forces built from
 * {@link VersionStore#history} of every key as of the last commit, and {@link VersionStore#before} a brute force
 * over the current history.
 */
class ChangeFeedPropertyTest {
    static final String POSTS = "public.posts";
    static final String FOLLOWS = "public.follows";
    static final String OTHER = "public.other";
    static final List<String> TABLES = List.of(POSTS, FOLLOWS, OTHER);
    static final Set<String> FEED_TABLES = Set.of(POSTS, FOLLOWS);
    static final List<IndexDeclaration> INDEXES = List.of(
            IndexDeclaration.parse("public.posts(grp)"),
            IndexDeclaration.parse("public.follows(grp)"),
            IndexDeclaration.parse("public.follows(grp,id)"));
    private static final int KEYS = 4;
    private static final int MAX_TIME = 12;
    private static final int GROUPS = 3;

    static final Schema ROW = SchemaBuilder.struct().name("test.Row")
            .field("id", Schema.INT64_SCHEMA).field("grp", Schema.OPTIONAL_INT64_SCHEMA).build();

    sealed interface Action {
    }

    /** {@code grp} -1: a null group, which no index holds. */
    record Put(int table, int key, long validFrom, long lsn, int ordinal, boolean tombstone, int grp) implements Action {
    }

    /** One version id for two keys of each feed table, as a snapshot's rows have. */
    record Snapshot(long validFrom, long lsn, int firstKey, int grp) implements Action {
    }

    record Prune(long horizon) implements Action {
    }

    record Commit() implements Action {
    }

    record Rollback() implements Action {
    }

    /** Close (which checkpoints) and open. */
    record Reopen() implements Action {
    }

    /** Copy the open store's files, as a crash leaves them, and open the copy: the journal is replayed. */
    record CrashReopen() implements Action {
    }

    static Struct row(long id, int grp) {
        return new Struct(ROW).put("id", id).put("grp", grp < 0 ? null : (long) grp);
    }

    @Provide
    Arbitrary<List<Action>> actions() {
        Arbitrary<Action> put = Combinators.combine(
                Arbitraries.integers().between(0, TABLES.size() - 1),
                Arbitraries.integers().between(0, KEYS - 1),
                Arbitraries.longs().between(0, MAX_TIME),
                Arbitraries.longs().between(1, 4),
                Arbitraries.integers().between(0, 1),
                Arbitraries.of(false, false, false, true),
                Arbitraries.integers().between(-1, GROUPS - 1)).as(Put::new);
        Arbitrary<Action> snapshot = Combinators.combine(
                Arbitraries.of(Version.BEGINNING_OF_TIME, 0L, 3L),
                Arbitraries.longs().between(1, 2),
                Arbitraries.integers().between(0, KEYS - 2),
                Arbitraries.integers().between(-1, GROUPS - 1)).as(Snapshot::new);
        Arbitrary<Action> prune = Arbitraries.longs().between(0, MAX_TIME).map(Prune::new);
        return Arbitraries.frequencyOf(
                Tuple.of(12, put),
                Tuple.of(2, snapshot),
                Tuple.of(2, prune),
                Tuple.of(5, Arbitraries.just(new Commit())),
                Tuple.of(2, Arbitraries.just(new Rollback())),
                Tuple.of(1, Arbitraries.just(new Reopen())),
                Tuple.of(2, Arbitraries.just(new CrashReopen()))).list().ofMinSize(1).ofMaxSize(60);
    }

    /** What the derived structures must hold: computed at each point where nothing is pending. */
    private record Expected(List<Change> feed, Map<IndexDeclaration, Map<RowKey, List<RowKey>>> indexes) {
    }

    @Property(tries = 250)
    void feedIndexesAndBeforeAgreeWithBruteForce(@ForAll("actions") List<Action> actions,
                                                 @ForAll boolean frequentCheckpoints) throws IOException {
        Path dir = Files.createTempDirectory("feed-prop");
        StoreOptions options = StoreOptions.defaults().withIndexes(INDEXES).withFeedTables(FEED_TABLES);
        long checkpointEvery = frequentCheckpoints ? 400 : 0;
        int generation = 0;
        Path file = dir.resolve("g0").resolve("s.db");
        Files.createDirectories(file.getParent());
        MapDbVersionStore store = MapDbVersionStore.open(file, options, checkpointEvery);
        try {
            Expected committed = bruteForce(store);
            for (Action a : actions) {
                if (a instanceof Put p) {
                    String table = TABLES.get(p.table());
                    SourcePosition pos = new SourcePosition(p.lsn(), p.ordinal());
                    store.put(table, RowKey.of(p.key()), p.tombstone()
                            ? Version.tombstone(p.validFrom(), pos)
                            : new Version(p.validFrom(), pos, row(p.key(), p.grp())));
                } else if (a instanceof Snapshot s) {
                    SourcePosition pos = new SourcePosition(s.lsn(), 0);
                    for (String table : List.of(POSTS, FOLLOWS)) {
                        for (int k = s.firstKey(); k <= s.firstKey() + 1; k++) {
                            store.put(table, RowKey.of(k), new Version(s.validFrom(), pos, row(k, (s.grp() + k) % GROUPS)));
                        }
                    }
                } else if (a instanceof Prune p) {
                    store.prune(p.horizon());
                } else if (a instanceof Commit) {
                    store.commit();
                    committed = bruteForce(store);
                } else if (a instanceof Rollback) {
                    store.rollback();
                    assertThat(bruteForce(store)).as("a rollback restores the committed rows").isEqualTo(committed);
                } else if (a instanceof Reopen) {
                    store.close();
                    store = MapDbVersionStore.open(file, options, checkpointEvery);
                    assertThat(store.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.REOPENED);
                } else if (a instanceof CrashReopen) {
                    Path copy = dir.resolve("g" + ++generation).resolve("s.db");
                    copyFiles(file, copy);
                    store.close();
                    file = copy;
                    store = MapDbVersionStore.open(file, options, checkpointEvery);
                    assertThat(store.openOutcome().kind()).isEqualTo(OpenOutcome.Kind.REOPENED);
                }
                assertAgrees(store, committed);
            }
        } finally {
            store.close();
            deleteAll(dir);
        }
    }

    /** The feed and indexes of the store's current rows, from {@link VersionStore#history} alone. */
    static Expected bruteForce(VersionStore store) {
        List<Change> feed = new ArrayList<>();
        Map<IndexDeclaration, Map<RowKey, List<RowKey>>> indexes = new LinkedHashMap<>();
        for (IndexDeclaration d : INDEXES) {
            indexes.put(d, new TreeMap<>());
        }
        for (String table : TABLES) {
            for (RowKey key : store.keys(table)) {
                for (Version v : store.history(table, key)) {
                    if (FEED_TABLES.contains(table)) {
                        feed.add(new Change(v.id(), table, key));
                    }
                    for (IndexDeclaration d : INDEXES) {
                        RowKey value = d.covers(table) ? d.valueOf(v.row()) : null;
                        if (value != null) {
                            List<RowKey> keys = indexes.get(d).computeIfAbsent(value, x -> new ArrayList<>());
                            if (!keys.contains(key)) {
                                keys.add(key);
                            }
                        }
                    }
                }
            }
        }
        feed.sort(Comparator.naturalOrder());
        indexes.values().forEach(m -> m.values().forEach(l -> l.sort(Comparator.naturalOrder())));
        return new Expected(feed, indexes);
    }

    static void assertAgrees(VersionStore store, Expected committed) {
        List<Change> feed = committed.feed();
        assertThat(store.changesAfter(Change.START, Long.MAX_VALUE, Integer.MAX_VALUE)).as("the whole feed").isEqualTo(feed);
        // Paged, and cut at a valid-from.
        List<Change> paged = new ArrayList<>();
        for (Change after = Change.START; ; ) {
            List<Change> page = store.changesAfter(after, Long.MAX_VALUE, 3);
            assertThat(page.size()).isLessThanOrEqualTo(3);
            if (page.isEmpty()) {
                break;
            }
            paged.addAll(page);
            after = page.get(page.size() - 1);
        }
        assertThat(paged).as("the feed read 3 at a time").isEqualTo(feed);
        for (long upTo : new long[]{Long.MIN_VALUE, 0, 5, MAX_TIME}) {
            assertThat(store.changesAfter(Change.START, upTo, 1000)).as("the feed up to %s", upTo)
                    .isEqualTo(feed.stream().filter(c -> c.id().validFrom() <= upTo).toList());
        }
        if (!feed.isEmpty()) {
            Change middle = feed.get(feed.size() / 2);
            assertThat(store.changesAfter(middle, Long.MAX_VALUE, 1000)).isEqualTo(feed.subList(feed.size() / 2 + 1, feed.size()));
        }

        for (Map.Entry<IndexDeclaration, Map<RowKey, List<RowKey>>> e : committed.indexes().entrySet()) {
            IndexDeclaration d = e.getKey();
            for (int g = 0; g < GROUPS; g++) {
                for (long id = -1; id < KEYS; id++) {
                    RowKey value = d.columns().size() == 1 ? RowKey.of((long) g) : RowKey.of((long) g, id);
                    if (d.columns().size() == 1 && id >= 0) {
                        break;
                    }
                    List<RowKey> expected = e.getValue().getOrDefault(value, List.of());
                    assertThat(store.indexed(d.table(), d.columns(), value, null, 100)).as("%s = %s", d, value).isEqualTo(expected);
                    List<RowKey> pagedKeys = new ArrayList<>();
                    for (RowKey after = null; ; ) {
                        List<RowKey> page = store.indexed(d.table(), d.columns(), value, after, 2);
                        if (page.isEmpty()) {
                            break;
                        }
                        pagedKeys.addAll(page);
                        after = page.get(page.size() - 1);
                    }
                    assertThat(pagedKeys).as("%s = %s, 2 at a time", d, value).isEqualTo(expected);
                }
            }
        }
        assertThatThrownBy(() -> store.indexed(OTHER, List.of("grp"), RowKey.of(1L), null, 10))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("public.posts(grp)")
                .hasMessageContaining("public.follows(grp,id)");

        // before: every committed feed entry and synthetic points, for every row, against the current history.
        List<Change> points = new ArrayList<>(feed);
        for (long t : new long[]{Version.BEGINNING_OF_TIME, 0, 3, 7, MAX_TIME + 1}) {
            for (String table : TABLES) {
                points.add(new Change(new VersionId(t, new SourcePosition(2, 0)), table, RowKey.of(1)));
            }
        }
        points.add(Change.START);
        for (String table : TABLES) {
            for (int k = 0; k < KEYS; k++) {
                RowKey key = RowKey.of(k);
                List<Version> history = store.history(table, key);
                for (Change at : points) {
                    Optional<Version> expected = Optional.empty();
                    for (Version v : history) {
                        if (new Change(v.id(), table, key).compareTo(at) < 0) {
                            expected = Optional.of(v);
                        }
                    }
                    assertThat(store.before(table, key, at)).as("%s %s before %s", table, k, at).isEqualTo(expected);
                }
            }
        }
    }

    private static void copyFiles(Path file, Path copy) throws IOException {
        Files.createDirectories(copy.getParent());
        for (Path p : StoreFiles.dataFiles(file)) {
            String suffix = p.getFileName().toString().substring(file.getFileName().toString().length());
            Files.copy(p, copy.resolveSibling(copy.getFileName() + suffix), StandardCopyOption.REPLACE_EXISTING);
        }
        Files.copy(file, copy, StandardCopyOption.REPLACE_EXISTING);
    }

    static void deleteAll(Path dir) {
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
