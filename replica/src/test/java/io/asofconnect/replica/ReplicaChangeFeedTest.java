package io.asofconnect.replica;

import io.asofconnect.common.lookup.Change;
import io.asofconnect.common.lookup.ChangeFeed;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.replica.config.ReplicaConfig;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The change feed and indexes of a real replica (issue 11's two tables): one source transaction that inserts
 * posts and follows interleaved and updates one post twice comes out of the feed in its statement order, and
 * the rows as of each of its changes ({@code before}) and the index on posts' author are those SQL saw.
 */
class ReplicaChangeFeedTest {
    private static final String POSTS = "public.posts";
    private static final String FOLLOWS = "public.follows";
    private static SourceDb db;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDb() {
        db = SourceDb.start("logical");
    }

    @AfterAll
    static void stopDb() {
        if (db != null) {
            db.close();
        }
    }

    @AfterEach
    void dropSlots() {
        db.dropIdleSlots();
    }

    private Map<String, Object> props() {
        Map<String, Object> p = db.props("timeline", "timeline_slot", dir, POSTS + "," + FOLLOWS);
        p.put(ReplicaConfig.INDEXES, "public.posts(author_id),public.follows(followee_id)");
        p.put(ReplicaConfig.FEED_TABLES, POSTS + "," + FOLLOWS);
        return p;
    }

    /** Post 10 as SQL saw it: "body/author_id", or null when absent. */
    private static String post10(Statement s) throws Exception {
        try (ResultSet rs = s.executeQuery("SELECT body, author_id FROM public.posts WHERE id = 10")) {
            return rs.next() ? rs.getString(1) + "/" + rs.getInt(2) : null;
        }
    }

    private static String post10(Optional<Version> v) {
        return v.filter(x -> !x.isTombstone()).map(x -> x.row().getString("body") + "/" + x.row().getInt32("author_id")).orElse(null);
    }

    @Test
    void oneTransactionComesOutInStatementOrderAndRowsAsOfEachChangeAreThoseSqlSaw() throws Exception {
        db.exec("CREATE TABLE public.posts (id int PRIMARY KEY, author_id int, body text)",
                "CREATE TABLE public.follows (follower_id int, followee_id int, PRIMARY KEY (follower_id, followee_id))",
                "INSERT INTO public.posts VALUES (1, 1, 'snap')", "INSERT INTO public.follows VALUES (5, 1)");
        try (ReplicaHandle h = ReplicaRegistry.acquire(props())) {
            ReplicaCaptureTest.catchUp(h);
            ChangeFeed feed = h.feed();
            List<Change> snapshot = feed.changesAfter(Change.START, h.watermark().get(), 100);
            assertThat(snapshot).extracting(Change::table).containsExactlyInAnyOrder(FOLLOWS, POSTS);
            assertThat(snapshot).extracting(c -> c.id().validFrom()).containsOnly(Version.BEGINNING_OF_TIME);

            List<String> statements = List.of(
                    "INSERT INTO public.posts VALUES (10, 1, 'a')",
                    "INSERT INTO public.follows VALUES (100, 1)",
                    "INSERT INTO public.posts VALUES (11, 2, 'b')",
                    "UPDATE public.posts SET body = 'a2' WHERE id = 10",
                    "INSERT INTO public.follows VALUES (101, 2)",
                    "UPDATE public.posts SET body = 'a3', author_id = 2 WHERE id = 10");
            List<String> post10Before = new ArrayList<>();
            long committed;
            try (Connection c = db.connect(); Statement s = c.createStatement()) {
                c.setAutoCommit(false);
                for (String sql : statements) {
                    post10Before.add(post10(s));
                    s.execute(sql);
                }
                post10Before.add(post10(s));
                String xid;
                try (ResultSet rs = s.executeQuery("SELECT pg_current_xact_id()::text")) {
                    rs.next();
                    xid = rs.getString(1);
                }
                c.commit();
                c.setAutoCommit(true);
                committed = SourceDb.commitMillis(c, xid);
            }
            ReplicaCaptureTest.catchUp(h);
            long w = h.watermark().get();
            assertThat(w).isGreaterThanOrEqualTo(committed);

            List<Change> tx = feed.changesAfter(snapshot.get(snapshot.size() - 1), w, 100);
            assertThat(tx).extracting(Change::table).containsExactly(POSTS, FOLLOWS, POSTS, POSTS, FOLLOWS, POSTS);
            assertThat(tx).extracting(Change::key).containsExactly(RowKey.of(10), RowKey.of(100, 1), RowKey.of(11), RowKey.of(10),
                    RowKey.of(101, 2), RowKey.of(10));
            assertThat(tx).extracting(c -> c.id().validFrom()).containsOnly(committed);
            assertThat(tx).isSorted();
            // Paged reads and an upTo before the commit agree.
            assertThat(feed.changesAfter(tx.get(1), w, 2)).containsExactly(tx.get(2), tx.get(3));
            assertThat(feed.changesAfter(Change.START, committed - 1, 100)).isEqualTo(snapshot);

            // before each statement's change, post 10 and the follows rows are as SQL saw them just before it.
            for (int i = 0; i < tx.size(); i++) {
                assertThat(post10(feed.before(POSTS, RowKey.of(10), tx.get(i)))).as("post 10 before statement %d", i)
                        .isEqualTo(post10Before.get(i));
                assertThat(feed.before(FOLLOWS, RowKey.of(100, 1), tx.get(i)).isPresent()).as("follows (100,1) before %d", i).isEqualTo(i > 1);
                assertThat(feed.before(FOLLOWS, RowKey.of(5, 1), tx.get(i))).as("the snapshot row").isPresent();
            }
            Change end = new Change(new io.asofconnect.common.lookup.VersionId(w + 1, io.asofconnect.common.lookup.SourcePosition.MIN),
                    "", RowKey.of(0));
            assertThat(post10(feed.before(POSTS, RowKey.of(10), end))).isEqualTo(post10Before.get(statements.size()));
            assertThat(feed.before(POSTS, RowKey.of(12), end)).isEmpty();

            // The index holds every key that had the value in a retained version; checked as of the end it is SQL's answer.
            for (int author = 1; author <= 3; author++) {
                List<RowKey> indexed = feed.indexed(POSTS, List.of("author_id"), RowKey.of(author), null, 100);
                assertThat(indexed).isSorted();
                TreeSet<Integer> current = new TreeSet<>();
                for (RowKey k : indexed) {
                    Optional<Version> v = feed.before(POSTS, k, end);
                    if (v.isPresent() && !v.get().isTombstone() && v.get().row().getInt32("author_id") == author) {
                        current.add(Integer.parseInt(k.components().get(0)));
                    }
                }
                assertThat(current).as("posts of author %d", author).isEqualTo(sqlIds("SELECT id FROM public.posts WHERE author_id = " + author));
            }
            assertThat(feed.indexed(POSTS, List.of("author_id"), RowKey.of(1), null, 100)).as("post 10 was author 1's once")
                    .containsExactly(RowKey.of(1), RowKey.of(10));
            assertThat(feed.indexed(FOLLOWS, List.of("followee_id"), RowKey.of(1L), null, 100))
                    .containsExactly(RowKey.of(5, 1), RowKey.of(100, 1));
            assertThatThrownBy(() -> feed.indexed(POSTS, List.of("body"), RowKey.of("a"), null, 10))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("public.posts(author_id)");
            assertThat(feed.historyStart()).isEqualTo(h.historyStart()).isEqualTo(Long.MIN_VALUE);

            assertSharingChecksWhatTheRunningReplicaKeeps();
        }
    }

    /** A second user of the running replica gets a clear error when it needs an index or a feed the replica lacks. */
    private void assertSharingChecksWhatTheRunningReplicaKeeps() {
        Map<String, Object> other = props();
        other.put(ReplicaConfig.INDEXES, "public.posts(author_id),public.follows(follower_id)");
        assertThatThrownBy(() -> ReplicaRegistry.acquire(other)).isInstanceOf(ConfigException.class)
                .hasMessageContaining(ReplicaConfig.INDEXES).hasMessageContaining("public.follows(followee_id)");

        Map<String, Object> needs = new HashMap<>();
        needs.put(ReplicaConfig.NAME, "timeline");
        needs.put(ReplicaConfig.INDEXES, "public.posts(body)");
        assertThatThrownBy(() -> ReplicaRegistry.acquire(needs)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("without the index public.posts(body)");
        needs.put(ReplicaConfig.INDEXES, "public.posts(author_id)");
        needs.put(ReplicaConfig.FEED_TABLES, POSTS);
        try (ReplicaHandle shared = ReplicaRegistry.acquire(needs)) {
            assertThat(shared.feed().indexed(POSTS, List.of("author_id"), RowKey.of(2), null, 10)).isNotEmpty();
        }
    }

    private static TreeSet<Integer> sqlIds(String sql) throws Exception {
        TreeSet<Integer> out = new TreeSet<>();
        try (Connection c = db.connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getInt(1));
            }
        }
        return out;
    }
}
