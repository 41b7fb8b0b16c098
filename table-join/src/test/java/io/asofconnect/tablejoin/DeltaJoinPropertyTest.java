package io.asofconnect.tablejoin;

import static org.assertj.core.api.Assertions.assertThat;

import io.asofconnect.common.lookup.Change;
import io.asofconnect.common.lookup.ChangeFeed;
import io.asofconnect.common.lookup.IndexDeclaration;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.StoreOptions;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The delta rule against a nested loop: random transactions of inserts, updates (including of the join column) and
 * deletes over two tables, several changes of both in one transaction, a snapshot whose rows share one version id,
 * written into a real version store; the view, applied record by record from the changelog, must equal at the end of
 * every transaction the join the test computes itself from its own copy of the tables. Small index pages make probes
 * cross page ends; a restart at a random record must give the rest of the changelog unchanged.
 */
class DeltaJoinPropertyTest {
    private static final String POSTS = "public.posts";
    private static final String FOLLOWS = "public.follows";
    private static final String AUTHORS = "public.authors";
    private static final Schema POST = SchemaBuilder.struct().name("post")
            .field("id", Schema.INT64_SCHEMA).field("author_id", Schema.OPTIONAL_INT64_SCHEMA)
            .field("body", Schema.OPTIONAL_STRING_SCHEMA).field("visibility", Schema.STRING_SCHEMA).build();
    private static final Schema FOLLOW = SchemaBuilder.struct().name("follow")
            .field("follower_id", Schema.INT64_SCHEMA).field("followee_id", Schema.INT64_SCHEMA).build();
    private static final Schema AUTHOR = SchemaBuilder.struct().name("author")
            .field("id", Schema.INT64_SCHEMA).field("name", Schema.STRING_SCHEMA).build();

    @TempDir
    Path dir;

    /** The test's own tables: per table, key to row. */
    private final Map<String, TreeMap<RowKey, Struct>> model = new HashMap<>();
    /** Each transaction's valid-from (its commit time); one millisecond may hold several. */
    private final List<Long> validFroms = new ArrayList<>();
    private final List<SourcePosition> transactionEnds = new ArrayList<>();

    @Test
    void innerJoinEqualsANestedLoopAfterEveryTransactionInEveryEncoding() throws Exception {
        for (int seed = 0; seed < 60; seed++) {
            for (Encoding encoding : List.of(Encoding.UPSERT, Encoding.RETRACT)) {
                runInner(seed, encoding, seed % 3 == 0 ? 2 : 7, seed % 2 == 0);
            }
        }
    }

    @Test
    void leftJoinEqualsANestedLoopAfterEveryTransaction() throws Exception {
        for (int seed = 0; seed < 60; seed++) {
            for (Encoding encoding : List.of(Encoding.UPSERT, Encoding.RETRACT)) {
                runLeft(seed, encoding);
            }
        }
    }

    @Test
    void aRestartAtAnyRecordContinuesTheSameChangelog() throws Exception {
        for (int seed = 100; seed < 130; seed++) {
            ViewDefinition view = timeline(Encoding.RETRACT, false);
            Path file = Files.createTempDirectory(dir, "s" + seed).resolve("store.mapdb");
            try (MapDbVersionStore store = open(file, view)) {
                generate(store, new Random(seed), 12, false);
                List<Emitted> whole = run(view, store, 3, null);
                Random r = new Random(seed);
                for (int cut = 0; cut < 5 && !whole.isEmpty(); cut++) {
                    int at = r.nextInt(whole.size());
                    List<Emitted> rest = run(view, store, 3, whole.get(at).offset);
                    assertThat(rest).as("seed %d, restart after record %d of %d", seed, at, whole.size())
                            .isEqualTo(whole.subList(at + 1, whole.size()));
                }
            }
        }
    }

    @Test
    void theLastRecordOfEachGroupAndOnlyItIsMarked() throws Exception {
        int marked = 0;
        int unmarked = 0;
        for (int seed = 200; seed < 240; seed++) {
            ViewDefinition view = timeline(Encoding.RETRACT, seed % 2 == 0);
            Path file = Files.createTempDirectory(dir, "g" + seed).resolve("store.mapdb");
            try (MapDbVersionStore store = open(file, view)) {
                generate(store, new Random(seed), 20, false);
                List<Emitted> whole = run(view, store, 3, null);
                for (int i = 0; i < whole.size(); i++) {
                    boolean last = i + 1 == whole.size() || !sameGroup(whole.get(i), whole.get(i + 1));
                    assertThat(whole.get(i).groupEnd()).as("seed %d, record %d of %d", seed, i, whole.size()).isEqualTo(last);
                    if (last) {
                        marked++;
                    } else {
                        unmarked++;
                    }
                }
            }
        }
        // Groups of several records (fan-outs, several changes in a millisecond) were met, not only single ones.
        assertThat(unmarked).isGreaterThan(50);
        assertThat(marked).isGreaterThan(50);
    }

    /** Two records of one group: one valid-from; for snapshot rows, one change. */
    private static boolean sameGroup(Emitted a, Emitted b) {
        return ViewChangelog.sameGroup(ViewOffset.fromMap(a.offset(), "v").change(), ViewOffset.fromMap(b.offset(), "v").change());
    }

    @Test
    void aGroupWhoseLastChangeGivesNoRecordIsMarkedAtItsLastRecord() throws Exception {
        ViewDefinition view = timeline(Encoding.UPSERT, false);
        try (MapDbVersionStore store = open(Files.createTempDirectory(dir, "n").resolve("store.mapdb"), view)) {
            long t = 1_700_000_000_000L;
            put(store, FOLLOWS, t, new SourcePosition(10, 0), follow(1, 7));
            put(store, POSTS, t, new SourcePosition(11, 0), post(1, 7L, "b", new Random(1)));
            // Same millisecond, no view change: a follow of an author without posts.
            put(store, FOLLOWS, t, new SourcePosition(12, 0), follow(2, 9));
            store.commit();
            ViewChangelog changelog = changelog(view, store, 3, null);
            List<ViewChangelog.Entry> first = changelog.next(t, 10);
            assertThat(first).hasSize(1);
            assertThat(first.get(0).groupEnd()).isTrue();
            // Nothing is left held: the next group's record is marked again, alone.
            put(store, POSTS, t + 1, new SourcePosition(13, 0), post(2, 7L, "c", new Random(1)));
            store.commit();
            List<ViewChangelog.Entry> second = changelog.next(t + 1, 10);
            assertThat(second).extracting(ViewChangelog.Entry::groupEnd).containsExactly(true);
        }
    }

    @Test
    void aFullBatchKeepsItsLastRecordUntilTheNextPollDecides() throws Exception {
        ViewDefinition view = timeline(Encoding.UPSERT, false);
        try (MapDbVersionStore store = open(Files.createTempDirectory(dir, "f").resolve("store.mapdb"), view)) {
            long t = 1_700_000_000_000L;
            put(store, POSTS, t, new SourcePosition(10, 0), post(1, 7L, "b", new Random(1)));
            for (int i = 0; i < 5; i++) {
                put(store, FOLLOWS, t, new SourcePosition(11 + i, 0), follow(i, 7));
            }
            store.commit();
            ViewChangelog changelog = changelog(view, store, 3, null);
            List<ViewChangelog.Entry> a = changelog.next(t, 3);
            List<ViewChangelog.Entry> b = changelog.next(t, 3);
            assertThat(a).extracting(ViewChangelog.Entry::groupEnd).containsExactly(false, false, false);
            assertThat(b).extracting(ViewChangelog.Entry::groupEnd).containsExactly(false, true);
            assertThat(changelog.next(t, 3)).isEmpty();
        }
    }

    private void runInner(int seed, Encoding encoding, int page, boolean filtered) throws Exception {
        ViewDefinition view = timeline(encoding, filtered);
        Path file = Files.createTempDirectory(dir, "s" + seed + encoding).resolve("store.mapdb");
        try (MapDbVersionStore store = open(file, view)) {
            generate(store, new Random(seed), 25, false);
            check(view, store, page, seed, innerOracle(filtered));
        }
    }

    private void runLeft(int seed, Encoding encoding) throws Exception {
        ViewSide posts = new ViewSide(POSTS, "posts", List.of("author_id"), List.of(), false);
        ViewSide authors = new ViewSide(AUTHORS, "authors", List.of("id"), List.of(), false);
        ViewDefinition view = new ViewDefinition(posts, authors, JoinType.LEFT,
                List.of(new OutputColumn(true, "id", "post_id"), new OutputColumn(true, "body", "body"),
                        new OutputColumn(false, "name", "author_name")),
                List.of("post_id"), encoding);
        assertThat(view.keyProblems(List.of("id"), List.of("id"))).isEmpty();
        Path file = Files.createTempDirectory(dir, "l" + seed + encoding).resolve("store.mapdb");
        try (MapDbVersionStore store = open(file, view)) {
            generate(store, new Random(seed), 25, true);
            check(view, store, 2, seed, leftOracle());
        }
    }

    private static ViewDefinition timeline(Encoding encoding, boolean filtered) {
        ViewSide posts = new ViewSide(POSTS, "posts", List.of("author_id"),
                filtered ? List.of(new ViewSide.Filter("visibility", "public")) : List.of(), false);
        ViewSide follows = new ViewSide(FOLLOWS, "follows", List.of("followee_id"), List.of(), false);
        ViewDefinition v = new ViewDefinition(posts, follows, JoinType.INNER,
                List.of(new OutputColumn(false, "follower_id", "follower_id"), new OutputColumn(true, "id", "post_id"),
                        new OutputColumn(true, "author_id", "author_id"), new OutputColumn(true, "body", "body")),
                List.of("follower_id", "post_id"), encoding);
        assertThat(v.keyProblems(List.of("id"), List.of("follower_id", "followee_id"))).isEmpty();
        return v;
    }

    private MapDbVersionStore open(Path file, ViewDefinition view) {
        model.clear();
        validFroms.clear();
        snapshots.clear();
        transactionEnds.clear();
        return MapDbVersionStore.open(file, StoreOptions.defaults()
                .withIndexes(List.of(view.left().index(), view.right().index()))
                .withFeedTables(Set.of(view.left().table(), view.right().table())));
    }

    /** Writes a snapshot and {@code transactions} random transactions into the store and the model. */
    private void generate(MapDbVersionStore store, Random r, int transactions, boolean withAuthors) {
        long lsn = 1000;
        // The snapshot: every row at one version id, as the replica writes an initial snapshot.
        SourcePosition snapshot = new SourcePosition(lsn++, 0);
        for (int i = 0; i < 6; i++) {
            put(store, POSTS, Version.BEGINNING_OF_TIME, snapshot, post(i, (long) r.nextInt(4), "p" + i, r));
        }
        for (int i = 0; i < 8; i++) {
            put(store, FOLLOWS, Version.BEGINNING_OF_TIME, snapshot, follow(r.nextInt(6), r.nextInt(4)));
        }
        if (withAuthors) {
            for (int i = 0; i < 3; i++) {
                put(store, AUTHORS, Version.BEGINNING_OF_TIME, snapshot, author(i, "a" + i + "v0"));
            }
        }
        store.commit();
        endTransaction(snapshot, Version.BEGINNING_OF_TIME);
        long time = 1_700_000_000_000L;
        for (int t = 0; t < transactions; t++) {
            time += r.nextInt(3); // sometimes two transactions in one millisecond
            int changes = 1 + r.nextInt(5);
            SourcePosition last = null;
            for (int c = 0; c < changes; c++) {
                last = new SourcePosition(lsn += 1 + r.nextInt(3), 0);
                int kind = r.nextInt(withAuthors ? 3 : 2);
                if (kind == 0) {
                    long id = r.nextInt(9);
                    RowKey key = RowKey.of(id);
                    Struct old = model.computeIfAbsent(POSTS, x -> new TreeMap<>()).get(key);
                    int what = r.nextInt(10);
                    if (old != null && what < 2) {
                        delete(store, POSTS, key, time, last);
                    } else {
                        Long author = r.nextInt(8) == 0 ? null : (long) r.nextInt(4);
                        put(store, POSTS, time, last, post(id, author, "b" + r.nextInt(5), r));
                    }
                } else if (kind == 1) {
                    Struct f = follow(r.nextInt(6), r.nextInt(4));
                    RowKey key = RowKey.of(f.getInt64("follower_id"), f.getInt64("followee_id"));
                    if (model.computeIfAbsent(FOLLOWS, x -> new TreeMap<>()).containsKey(key) && r.nextBoolean()) {
                        delete(store, FOLLOWS, key, time, last);
                    } else {
                        put(store, FOLLOWS, time, last, f);
                    }
                } else {
                    long id = r.nextInt(4);
                    if (model.computeIfAbsent(AUTHORS, x -> new TreeMap<>()).containsKey(RowKey.of(id)) && r.nextInt(4) == 0) {
                        delete(store, AUTHORS, RowKey.of(id), time, last);
                    } else {
                        put(store, AUTHORS, time, last, author(id, "a" + id + "v" + r.nextInt(3)));
                    }
                }
            }
            store.commit();
            endTransaction(last, time);
        }
    }

    private void endTransaction(SourcePosition last, long validFrom) {
        transactionEnds.add(last);
        validFroms.add(validFrom);
        snapshots.add(copy());
    }

    private final List<Map<String, TreeMap<RowKey, Struct>>> snapshots = new ArrayList<>();

    private Map<String, TreeMap<RowKey, Struct>> copy() {
        Map<String, TreeMap<RowKey, Struct>> c = new HashMap<>();
        model.forEach((t, rows) -> c.put(t, new TreeMap<>(rows)));
        return c;
    }

    private void put(MapDbVersionStore store, String table, long validFrom, SourcePosition p, Struct row) {
        RowKey key = switch (table) {
            case POSTS, AUTHORS -> RowKey.of(row.getInt64("id"));
            default -> RowKey.of(row.getInt64("follower_id"), row.getInt64("followee_id"));
        };
        store.put(table, key, new Version(validFrom, p, row));
        model.computeIfAbsent(table, t -> new TreeMap<>()).put(key, row);
    }

    private void delete(MapDbVersionStore store, String table, RowKey key, long validFrom, SourcePosition p) {
        store.put(table, key, Version.tombstone(validFrom, p));
        model.get(table).remove(key);
    }

    private static Struct post(long id, Long author, String body, Random r) {
        return new Struct(POST).put("id", id).put("author_id", author).put("body", body)
                .put("visibility", r.nextInt(4) == 0 ? "private" : "public");
    }

    private static Struct follow(long follower, long followee) {
        return new Struct(FOLLOW).put("follower_id", follower).put("followee_id", followee);
    }

    private static Struct author(long id, String name) {
        return new Struct(AUTHOR).put("id", id).put("name", name);
    }

    private interface Oracle {
        Map<List<Object>, List<Object>> at(Map<String, TreeMap<RowKey, Struct>> tables);
    }

    /** The nested loop: every post (passing the filter) with every follow of its author. */
    private static Oracle innerOracle(boolean filtered) {
        return tables -> {
            Map<List<Object>, List<Object>> view = new HashMap<>();
            for (Struct p : tables.getOrDefault(POSTS, new TreeMap<>()).values()) {
                if (filtered && !"public".equals(p.getString("visibility"))) {
                    continue;
                }
                for (Struct f : tables.getOrDefault(FOLLOWS, new TreeMap<>()).values()) {
                    if (p.getInt64("author_id") != null && p.getInt64("author_id").equals(f.getInt64("followee_id"))) {
                        view.put(List.of(f.getInt64("follower_id"), p.getInt64("id")),
                                Arrays.asList(f.getInt64("follower_id"), p.getInt64("id"), p.getInt64("author_id"), p.getString("body")));
                    }
                }
            }
            return view;
        };
    }

    /** Every post, with its author's name or NULL. */
    private static Oracle leftOracle() {
        return tables -> {
            Map<List<Object>, List<Object>> view = new HashMap<>();
            for (Struct p : tables.getOrDefault(POSTS, new TreeMap<>()).values()) {
                String name = null;
                for (Struct a : tables.getOrDefault(AUTHORS, new TreeMap<>()).values()) {
                    if (p.getInt64("author_id") != null && p.getInt64("author_id").equals(a.getInt64("id"))) {
                        name = a.getString("name");
                    }
                }
                view.put(List.of(p.getInt64("id")), Arrays.asList(p.getInt64("id"), p.getString("body"), name));
            }
            return view;
        };
    }

    private static ViewChangelog changelog(ViewDefinition view, ChangeFeed feed, int page, ViewOffset after) {
        DeltaJoin join = new DeltaJoin(view, feed, new ViewRows(view, "v"), page);
        return new ViewChangelog(view, feed, join, new ChangelogEncoder(view.encoding(), "__op", "v"), "v", after);
    }

    /** Applies the changelog transaction by transaction; after each, the view must be the oracle's. */
    private void check(ViewDefinition view, ChangeFeed feed, int page, int seed, Oracle oracle) {
        ViewChangelog changelog = changelog(view, feed, page, null);
        Map<List<Object>, List<Object>> applied = new HashMap<>();
        for (int t = 0; t < transactionEnds.size(); t++) {
            // Every change up to the transaction's last one: the feed read up to its valid-from.
            if (t + 1 < validFroms.size() && validFroms.get(t + 1).equals(validFroms.get(t))) {
                continue; // the next transaction committed in the same millisecond: the feed cannot stop between them
            }
            List<ViewChangelog.Entry> batch = changelog.next(validFroms.get(t), Integer.MAX_VALUE);
            for (ViewChangelog.Entry e : batch) {
                apply(view, applied, e.record());
            }
            if (!batch.isEmpty()) {
                // Read up to the watermark: the group is complete, its last record is handed out, marked.
                assertThat(batch.get(batch.size() - 1).groupEnd()).as("seed %d, the last record read up to transaction %d", seed, t).isTrue();
            }
            assertThat(applied).as("seed %d, %s %s, page %d, after transaction %d", seed, view.type(), view.encoding(), page, t)
                    .isEqualTo(oracle.at(snapshots.get(t)));
        }
    }

    /** A consumer of the changelog: UPSERT puts or removes; RETRACT must retract exactly the row it holds. */
    private static void apply(ViewDefinition view, Map<List<Object>, List<Object>> table, ChangelogEncoder.Encoded rec) {
        List<Object> key = new ArrayList<>();
        for (String k : view.key()) {
            key.add(rec.key().get(k));
        }
        if (rec.value() == null) {
            assertThat(table).as("a tombstone for a row the view has").containsKey(key);
            table.remove(key);
            return;
        }
        List<Object> row = new ArrayList<>();
        for (OutputColumn c : view.columns()) {
            row.add(rec.value().get(c.name()));
        }
        if (view.encoding() == Encoding.UPSERT) {
            table.put(key, row);
            return;
        }
        String op = rec.value().getString("__op");
        switch (op) {
            case "+I", "+U" -> assertThat(table.put(key, row)).as("%s of a key the view has no row for", op).isNull();
            case "-U", "-D" -> assertThat(table.remove(key)).as("%s retracts the row the view holds", op).isEqualTo(row);
            default -> throw new AssertionError("op " + op);
        }
    }

    private record Emitted(Map<String, Object> offset, Object key, Object value, boolean groupEnd) {
    }

    /** The whole changelog, from the start or resumed after {@code from}. */
    private static List<Emitted> run(ViewDefinition view, ChangeFeed feed, int page, Map<String, Object> from) {
        ViewChangelog changelog = changelog(view, feed, page, from == null ? null : ViewOffset.fromMap(from, "v"));
        List<Emitted> out = new ArrayList<>();
        for (List<ViewChangelog.Entry> batch = changelog.next(Long.MAX_VALUE, 7); !batch.isEmpty();
             batch = changelog.next(Long.MAX_VALUE, 7)) {
            for (ViewChangelog.Entry e : batch) {
                out.add(new Emitted(e.offset().toMap(), e.record().key(), e.record().value(), e.groupEnd()));
            }
        }
        return out;
    }
}
