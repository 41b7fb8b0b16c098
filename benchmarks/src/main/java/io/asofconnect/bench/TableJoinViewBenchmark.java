package io.asofconnect.bench;

import io.asofconnect.replica.ReplicaHandle;
import io.asofconnect.replica.ReplicaRegistry;
import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.tablejoin.TableJoinConfig;
import io.asofconnect.tablejoin.TableJoinSourceConnector;
import io.asofconnect.tablejoin.TableJoinSourceTask;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTaskContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.postgresql.PGConnection;

import java.io.StringReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Issue 11: the table join's view maintenance against recomputing the view with SQL. The view is a timeline,
 * {@code SELECT f.follower_id, p.id AS post_id, p.author_id, p.body, p.posted_at FROM posts p JOIN follows f ON
 * f.followee_id = p.author_id}, over a follower graph whose followee popularity is Zipf-like (exponent 1): a post of a
 * popular author changes thousands of view rows, one of a typical author a handful.
 *
 * <p>Data (seeded): {@code users} = rows / 100; each user follows {@value #FOLLOWS_PER_USER} distinct others drawn
 * by popularity; {@value #POSTS_PER_USER} posts per user on average, each by a user drawn uniformly; so the join has
 * about {@code rows} rows. Workload: batches of source changes, each batch one transaction, mixed: new posts by
 * uniformly drawn authors 30%, edited bodies 25%, deleted posts 10%, follows (followee by popularity) 20%, unfollows
 * 15%. The batches are generated before anything is timed, with an in-memory model of both tables that gives each
 * change's fan-out (the view changes it causes, every earlier change applied): a post's is its author's follower
 * count, a follow's the followee's post count.
 *
 * <p>Ours: an embedded Postgres with logical decoding ({@link BenchPostgres}); the real {@link TableJoinSourceConnector}
 * (its start checks the view against the database) and {@link TableJoinSourceTask} in this JVM, its replica started by
 * the task through {@link ReplicaRegistry}, its records (UPSERT: one per view change) taken from {@code poll()}, no
 * Kafka. A batch is timed from its first statement to the return of the poll that completes the batch's expected record
 * count (from the model). Outside the timed span the batch is checked: one more poll, taken with the watermark past
 * the commit, must return nothing (no record missing or extra), and every round ends by comparing the view the
 * records built (keys upserted and deleted) with the same join run by SQL on the source, row by row. The batch's time
 * is split: applying it (statements and commit), the replica's wait (from the commit until its watermark passed the
 * commit, seen by a second handle on the same replica), the task's join work (the polls that returned records), and
 * the rest.
 *
 * <p>Peer: a second embedded Postgres, same settings, with the same tables and data, the same batches, each
 * followed by {@code REFRESH MATERIALIZED VIEW timeline} (a plain materialized view of the same SQL, no index): its
 * time is from the batch's first statement to the refresh's end. {@code REFRESH MATERIALIZED VIEW CONCURRENTLY} of a
 * second such view with the unique index it needs ({@code follower_id, post_id}) is reported apart, from
 * {@value #CONCURRENT_BATCHES} more batches through the peer alone after the rounds (each applied, refreshed plainly,
 * then concurrently): it took 7 times as long as the plain refresh at 200,000 rows, too long to follow every batch.
 *
 * <p>Order: the initial build of both (not part of the ratio: reported separately), a warm-up of
 * {@value #WARMUP_BATCHES} batches through both sides (discarded), then rounds of {@code batches} batches; odd rounds
 * run all of the round's batches through ours first, even rounds through the peer first. Each side's figure is its
 * median over the rounds; the spread is the fastest and slowest round.
 *
 * <p>Run: {@code java -cp benchmarks/target-bench/benchmarks.jar io.asofconnect.bench.TableJoinViewBenchmark [rows]
 * [batches] [changes] [rounds]} (defaults 1,000,000, 20, 200, 3); prints {@code bench view-vs-sql-recompute ours=<source
 * changes/s> peer=<source changes/s> ratio=<peer time per change / ours>}.
 */
public final class TableJoinViewBenchmark {
    static final String ROW = "view-vs-sql-recompute";
    static final int FOLLOWS_PER_USER = 20;
    static final int POSTS_PER_USER = 5;
    static final double ZIPF_EXPONENT = 1.0;
    static final int WARMUP_BATCHES = 5;
    /** Batches through the peer alone after the rounds, each followed by REFRESH ... CONCURRENTLY as well. */
    static final int CONCURRENT_BATCHES = 5;
    static final long SEED = 11;
    static final Duration BATCH_TIMEOUT = Duration.ofSeconds(120);
    static final String VIEW_SQL = "SELECT f.follower_id, p.id AS post_id, p.author_id, p.body, p.posted_at"
            + " FROM posts p JOIN follows f ON f.followee_id = p.author_id";
    private static final Instant POSTED_BASE = Instant.parse("2024-01-01T00:00:00Z");
    private static final String FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor"
            + " incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco.";

    private TableJoinViewBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int rows = args.length > 0 ? Integer.parseInt(args[0].replace("_", "")) : 1_000_000;
        int batches = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        int changes = args.length > 2 ? Integer.parseInt(args[2]) : 200;
        int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
        if (rows < 10_000 || batches < 1 || changes < 1 || rounds < 1) {
            throw new IllegalArgumentException("arguments: [rows >= 10000] [batches >= 1] [changes >= 1] [rounds >= 1]");
        }
        int users = rows / (FOLLOWS_PER_USER * POSTS_PER_USER);
        System.out.printf("Table join view benchmark (issue 11): about %,d timeline rows (%,d users), %d rounds of %d batches"
                + " of %d source changes, %d warm-up batches%n", rows, users, rounds, batches, changes, WARMUP_BATCHES);

        // Every batch is made before anything is timed; the model's view size after each part checks both sides.
        Model model = new Model(users, new Random(SEED));
        Model.Initial initial = model.initial;
        List<Batch> warmup = model.batches(WARMUP_BATCHES, changes);
        long rowsAfterWarmup = model.viewRows;
        List<List<Batch>> measured = new ArrayList<>();
        List<Long> rowsAfterRound = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            measured.add(model.batches(batches, changes));
            rowsAfterRound.add(model.viewRows);
        }
        List<Batch> concurrent = model.batches(CONCURRENT_BATCHES, changes);
        long rowsAfterConcurrent = model.viewRows;

        try (BenchPostgres oursPg = new BenchPostgres("table-join-view-ours");
             BenchPostgres peerPg = new BenchPostgres("table-join-view-peer");
             Connection oursConn = oursPg.connect();
             Connection peerConn = peerPg.connect()) {
            load(oursConn, initial, false);
            load(peerConn, initial, true);
            long joinRows = count(oursConn, "SELECT count(*) FROM (" + VIEW_SQL + ") v");
            if (joinRows != initial.joinRows) {
                throw new IllegalStateException("the source's join has " + joinRows + " rows, the model " + initial.joinRows);
            }
            printData(initial, users);

            Peer peer = new Peer(peerConn);
            double peerBuild = peer.initialBuild();
            try (Ours ours = new Ours(oursPg, oursConn)) {
                ours.initialBuild(joinRows);
                System.out.printf("  initial build, ours: %.2f s, %,.0f view rows/s (replica snapshot until its first watermark"
                                + " %.2f s, then the join %.2f s; CPU: task thread %.2f s, JVM %.2f s)%n", ours.buildSecs,
                        joinRows / ours.buildSecs, ours.buildSnapshotSecs, ours.buildSecs - ours.buildSnapshotSecs,
                        ours.buildTaskCpuSecs, ours.buildJvmCpuSecs);
                System.out.printf("  initial build, peer: REFRESH MATERIALIZED VIEW %.2f s, %,.0f view rows/s%n", peerBuild,
                        joinRows / peerBuild);

                System.out.printf("warm-up, %d batches through both sides (discarded)%n", WARMUP_BATCHES);
                for (Batch b : warmup) {
                    ours.run(b);
                    peer.run(b, false);
                }
                ours.verify(rowsAfterWarmup);
                peer.verify(rowsAfterWarmup);

                List<Side> oursRounds = new ArrayList<>();
                List<Side> peerRounds = new ArrayList<>();
                for (int r = 1; r <= rounds; r++) {
                    boolean peerFirst = r % 2 == 0;
                    List<Batch> round = measured.get(r - 1);
                    Side o = new Side();
                    Side p = new Side();
                    if (peerFirst) {
                        runAll(round, b -> p.add(peer.run(b, false)));
                        runAll(round, b -> o.add(ours.run(b)));
                    } else {
                        runAll(round, b -> o.add(ours.run(b)));
                        runAll(round, b -> p.add(peer.run(b, false)));
                    }
                    ours.verify(rowsAfterRound.get(r - 1));
                    peer.verify(rowsAfterRound.get(r - 1));
                    oursRounds.add(o);
                    peerRounds.add(p);
                    System.out.printf("  round %d of %d (%s first): ours %.2f s (%,.0f changes/s, %,.0f view changes/s), peer %.2f s"
                                    + " (%,.0f changes/s); ratio %.2f; slowest batch: ours %s, peer %s%n", r, rounds,
                            peerFirst ? "peer" : "ours", o.secs(), o.changes / o.secs(), o.viewChanges / o.secs(), p.secs(),
                            p.changes / p.secs(), p.secs() / o.secs(), o.slowest(), p.slowest());
                }
                System.out.printf("REFRESH ... CONCURRENTLY: %d more batches through the peer alone%n", CONCURRENT_BATCHES);
                peer.catchUpConcurrentView();
                Side pc = new Side();
                runAll(concurrent, b -> pc.add(peer.run(b, true)));
                peer.verify(rowsAfterConcurrent);
                report(rows, users, batches, changes, rounds, measured, oursRounds, peerRounds, pc, joinRows);
            }
        }
    }

    private interface BatchRun {
        void run(Batch b) throws Exception;
    }

    private static void runAll(List<Batch> batches, BatchRun run) throws Exception {
        for (Batch b : batches) {
            run.run(b);
        }
    }

    // ---------------------------------------------------------------- report

    private static void report(int rows, int users, int batches, int changes, int rounds, List<List<Batch>> measured,
                               List<Side> ours, List<Side> peer, Side concurrent, long joinRows) {
        List<Integer> fans = new ArrayList<>();
        int[] perBatch = measured.stream().flatMap(List::stream).mapToInt(b -> b.expected).sorted().toArray();
        Map<Op.Kind, List<Integer>> byKind = new HashMap<>();
        for (List<Batch> round : measured) {
            for (Batch b : round) {
                for (Op op : b.ops) {
                    fans.add(op.fanOut);
                    byKind.computeIfAbsent(op.kind, k -> new ArrayList<>()).add(op.fanOut);
                }
            }
        }
        int[] f = fans.stream().mapToInt(Integer::intValue).sorted().toArray();

        System.out.println();
        System.out.printf("View maintenance vs SQL recompute, timeline = posts JOIN follows, %,d view rows at the start (%,d users,"
                        + " Zipf followee popularity), %d batches x %d source changes per round, median of %d rounds:%n",
                joinRows, users, batches, changes, rounds);
        System.out.printf("  fan-out, view changes per source change: median %d, mean %.1f, p90 %d, p99 %d, max %,d; per batch of %d:"
                        + " min %,d, median %,d, max %,d%n", pct(f, 50), Arrays.stream(f).average().orElse(0), pct(f, 90), pct(f, 99),
                f[f.length - 1], changes, perBatch[0], pct(perBatch, 50), perBatch[perBatch.length - 1]);
        for (Op.Kind k : Op.Kind.values()) {
            int[] v = byKind.getOrDefault(k, List.of()).stream().mapToInt(Integer::intValue).sorted().toArray();
            if (v.length > 0) {
                System.out.printf("    %-9s %5d changes, fan-out median %d, max %,d%n", k.label, v.length, pct(v, 50), v[v.length - 1]);
            }
        }
        Side o = median(ours);
        Side p = median(peer);
        double oursPerChange = o.secs() / o.changes;
        double peerPerChange = p.secs() / p.changes;
        System.out.printf("  ours (table-join task, UPSERT):  %,8.0f source changes/s, %,10.0f view changes/s, %.3f ms per source change"
                        + " (rounds %.2f-%.2f s)%n", o.changes / o.secs(), o.viewChanges / o.secs(), oursPerChange * 1e3,
                min(ours, Side::secs), max(ours, Side::secs));
        System.out.printf("    where it goes (median round): applying the batch %.0f%%, waiting for the replica (polls that returned"
                        + " nothing) %.0f%%, the task's join work (polls that returned records) %.0f%%; task thread CPU %.3f ms per"
                        + " source change, JVM CPU (replica + task) %.3f ms%n", 100 * o.applyNanos / o.nanos, 100 * o.waitNanos / o.nanos,
                100 * o.joinNanos / o.nanos, o.taskCpuNanos / 1e6 / o.changes, o.jvmCpuNanos / 1e6 / o.changes);
        System.out.printf("    per batch (medians over the round's batches): waiting %.0f ms, of which the replica's watermark passing the"
                        + " commit %.0f ms (seen by a second handle); join work %.1f ms per batch on average, %,.0f view changes/s of"
                        + " join work%n", Side.medianMs(o.waits), Side.medianMs(o.watermarks), o.joinNanos / 1e6 / o.batches,
                o.viewChanges / (o.joinNanos / 1e9));
        System.out.printf("  peer (REFRESH MATERIALIZED VIEW):  %,8.0f source changes/s, %.3f ms per source change, refresh %.0f ms per"
                        + " batch (rounds %.2f-%.2f s)%n", p.changes / p.secs(), peerPerChange * 1e3,
                (p.nanos - p.applyNanos) / 1e6 / p.batches, min(peer, Side::secs), max(peer, Side::secs));
        System.out.printf("  peer (REFRESH ... CONCURRENTLY):  %,8.0f source changes/s, %.3f ms per source change, refresh %.0f ms per"
                        + " batch (%d batches after the rounds; the plain refresh of the same batches %.0f ms)%n",
                concurrent.changes / concurrent.concurrentSecs(), concurrent.concurrentSecs() / concurrent.changes * 1e3,
                (concurrent.concurrentNanos - concurrent.applyNanos) / 1e6 / concurrent.batches, concurrent.batches,
                (concurrent.nanos - concurrent.applyNanos) / 1e6 / concurrent.batches);
        double[] ratios = new double[ours.size()];
        for (int i = 0; i < ratios.length; i++) {
            ratios[i] = peer.get(i).secs() / ours.get(i).secs();
        }
        Arrays.sort(ratios);
        System.out.printf("  ratio, peer time per change / ours: %.2f (rounds %.2f-%.2f); against CONCURRENTLY %.2f; goal >= 10 at"
                        + " 1,000,000 rows%n", peerPerChange / oursPerChange, ratios[0], ratios[ratios.length - 1],
                concurrent.concurrentSecs() / concurrent.changes / oursPerChange);
        BenchLine.rate(ROW, o.changes / o.secs(), p.changes / p.secs());
    }

    private static int pct(int[] sorted, int p) {
        return sorted[Math.min(sorted.length - 1, (int) Math.floor(p / 100.0 * sorted.length))];
    }

    private static double min(List<Side> s, java.util.function.ToDoubleFunction<Side> f) {
        return s.stream().mapToDouble(f).min().orElse(Double.NaN);
    }

    private static double max(List<Side> s, java.util.function.ToDoubleFunction<Side> f) {
        return s.stream().mapToDouble(f).max().orElse(Double.NaN);
    }

    /** The round whose time is the median (of an even count, the faster middle one). */
    private static Side median(List<Side> rounds) {
        List<Side> sorted = new ArrayList<>(rounds);
        sorted.sort((a, b) -> Double.compare(a.secs(), b.secs()));
        return sorted.get((sorted.size() - 1) / 2);
    }

    private static void printData(Model.Initial d, int users) {
        int[] followers = Arrays.copyOf(d.followerCounts, d.followerCounts.length);
        Arrays.sort(followers);
        System.out.printf("  data: %,d users, %,d follows, %,d posts; timeline %,d rows; followers per user: median %d, p99 %,d,"
                        + " max %,d%n", users, d.follows, d.posts, d.joinRows, pct(followers, 50), pct(followers, 99),
                followers[followers.length - 1]);
    }

    // ---------------------------------------------------------------- the model and its batches

    /** One source change and the number of view changes it causes. */
    record Op(Kind kind, long a, long b, String body, int fanOut) {
        enum Kind {
            NEW_POST("new post"), EDIT("edit"), DELETE("delete"), FOLLOW("follow"), UNFOLLOW("unfollow");

            final String label;

            Kind(String label) {
                this.label = label;
            }
        }
    }

    /** Source changes applied in one transaction; {@code expected} view changes in all. */
    record Batch(List<Op> ops, int expected) {
    }

    /** A set of longs with uniform random picks. */
    static final class LiveSet {
        private final List<Long> items = new ArrayList<>();
        private final Map<Long, Integer> index = new HashMap<>();

        boolean add(long v) {
            if (index.containsKey(v)) {
                return false;
            }
            index.put(v, items.size());
            items.add(v);
            return true;
        }

        boolean contains(long v) {
            return index.containsKey(v);
        }

        void remove(long v) {
            Integer i = index.remove(v);
            long last = items.remove(items.size() - 1);
            if (i != items.size()) {
                items.set(i, last);
                index.put(last, i);
            }
        }

        long random(Random rnd) {
            return items.get(rnd.nextInt(items.size()));
        }

        int size() {
            return items.size();
        }
    }

    /**
     * The two tables in memory: the initial data, then batches generated against it, each change's fan-out counted
     * with every earlier change applied, and the view's row count.
     */
    static final class Model {
        record Initial(long[] postIds, long[] postAuthors, String[] bodies, long[] followPairs, int[] followerCounts,
                       long joinRows, int posts, int follows) {
        }

        private final int users;
        private final Random rnd;
        private final double[] zipfCdf;
        private final int[] followers;
        private final int[] postsBy;
        private final Map<Long, Long> authorOf = new HashMap<>();
        private final LiveSet posts = new LiveSet();
        private final LiveSet edges = new LiveSet();
        private long nextPostId;
        private long revision;
        /** The view's rows with every change made so far applied. */
        long viewRows;
        final Initial initial;

        Model(int users, Random rnd) {
            this.users = users;
            this.rnd = rnd;
            followers = new int[users + 1];
            postsBy = new int[users + 1];
            zipfCdf = new double[users];
            double sum = 0;
            for (int k = 0; k < users; k++) {
                sum += 1 / Math.pow(k + 1, ZIPF_EXPONENT);
                zipfCdf[k] = sum;
            }
            for (int k = 0; k < users; k++) {
                zipfCdf[k] /= sum;
            }
            int follows = 0;
            int perUser = Math.min(FOLLOWS_PER_USER, users - 1);
            long[] pairs = new long[users * perUser];
            for (int u = 1; u <= users; u++) {
                for (int n = 0; n < perUser; ) {
                    long e = popular();
                    if (e != u && edges.add(edge(u, e))) {
                        followers[(int) e]++;
                        pairs[follows++] = edge(u, e);
                        n++;
                    }
                }
            }
            int postCount = users * POSTS_PER_USER;
            long[] ids = new long[postCount];
            long[] authors = new long[postCount];
            String[] bodies = new String[postCount];
            long join = 0;
            for (int i = 0; i < postCount; i++) {
                long id = ++nextPostId;
                long author = 1 + rnd.nextInt(users);
                ids[i] = id;
                authors[i] = author;
                bodies[i] = body(id);
                authorOf.put(id, author);
                posts.add(id);
                postsBy[(int) author]++;
                join += followers[(int) author];
            }
            viewRows = join;
            initial = new Initial(ids, authors, bodies, pairs, Arrays.copyOfRange(followers, 1, users + 1), join, postCount, follows);
        }

        static long edge(long follower, long followee) {
            return follower << 32 | followee;
        }

        /** A user drawn by popularity: user k with weight 1/k^s. */
        private long popular() {
            int i = Arrays.binarySearch(zipfCdf, rnd.nextDouble());
            return (i >= 0 ? i : -i - 1) + 1;
        }

        private String body(long id) {
            String head = "post " + id + " rev " + (revision++) + ": ";
            return head + FILLER.substring(0, 40 + rnd.nextInt(FILLER.length() - 40));
        }

        List<Batch> batches(int count, int changes) {
            List<Batch> out = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                out.add(batch(changes));
            }
            return out;
        }

        private Batch batch(int changes) {
            List<Op> ops = new ArrayList<>(changes);
            int expected = 0;
            for (int i = 0; i < changes; i++) {
                Op op = change();
                ops.add(op);
                expected += op.fanOut;
            }
            return new Batch(ops, expected);
        }

        private Op change() {
            double x = rnd.nextDouble();
            if (x < 0.30 || posts.size() == 0 && x < 0.65) {
                long id = ++nextPostId;
                long author = 1 + rnd.nextInt(users);
                authorOf.put(id, author);
                posts.add(id);
                postsBy[(int) author]++;
                viewRows += followers[(int) author];
                return new Op(Op.Kind.NEW_POST, id, author, body(id), followers[(int) author]);
            }
            if (x < 0.55) {
                long id = posts.random(rnd);
                return new Op(Op.Kind.EDIT, id, authorOf.get(id), body(id), followers[authorOf.get(id).intValue()]);
            }
            if (x < 0.65) {
                long id = posts.random(rnd);
                long author = authorOf.remove(id);
                posts.remove(id);
                postsBy[(int) author]--;
                viewRows -= followers[(int) author];
                return new Op(Op.Kind.DELETE, id, author, null, followers[(int) author]);
            }
            if (x < 0.85 || edges.size() == 0) {
                while (true) {
                    long follower = 1 + rnd.nextInt(users);
                    long followee = popular();
                    if (follower != followee && edges.add(edge(follower, followee))) {
                        followers[(int) followee]++;
                        viewRows += postsBy[(int) followee];
                        return new Op(Op.Kind.FOLLOW, follower, followee, null, postsBy[(int) followee]);
                    }
                }
            }
            long e = edges.random(rnd);
            edges.remove(e);
            long follower = e >>> 32;
            long followee = e & 0xffffffffL;
            followers[(int) followee]--;
            viewRows -= postsBy[(int) followee];
            return new Op(Op.Kind.UNFOLLOW, follower, followee, null, postsBy[(int) followee]);
        }
    }

    // ---------------------------------------------------------------- source databases

    private static void load(Connection c, Model.Initial d, boolean peer) throws SQLException {
        long started = System.nanoTime();
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE posts (id bigint PRIMARY KEY, author_id bigint NOT NULL, body text NOT NULL,"
                    + " posted_at timestamptz NOT NULL)");
            s.execute("CREATE TABLE follows (follower_id bigint, followee_id bigint, PRIMARY KEY (follower_id, followee_id))");
            StringBuilder posts = new StringBuilder();
            for (int i = 0; i < d.posts; i++) {
                posts.append(d.postIds[i]).append('\t').append(d.postAuthors[i]).append('\t').append(d.bodies[i]).append('\t')
                        .append(postedAt(d.postIds[i])).append('\n');
            }
            StringBuilder follows = new StringBuilder();
            for (int i = 0; i < d.follows; i++) {
                follows.append(d.followPairs[i] >>> 32).append('\t').append(d.followPairs[i] & 0xffffffffL).append('\n');
            }
            try {
                var copy = c.unwrap(PGConnection.class).getCopyAPI();
                copy.copyIn("COPY posts FROM STDIN", new StringReader(posts.toString()));
                copy.copyIn("COPY follows FROM STDIN", new StringReader(follows.toString()));
            } catch (java.io.IOException e) {
                throw new SQLException(e);
            }
            // Both sides alike: the indexes a timeline's users would have, and fresh statistics.
            s.execute("CREATE INDEX posts_author ON posts (author_id)");
            s.execute("CREATE INDEX follows_followee ON follows (followee_id)");
            s.execute("ANALYZE posts");
            s.execute("ANALYZE follows");
            if (peer) {
                s.execute("CREATE MATERIALIZED VIEW timeline AS " + VIEW_SQL + " WITH NO DATA");
                s.execute("CREATE MATERIALIZED VIEW timeline_c AS " + VIEW_SQL + " WITH NO DATA");
                s.execute("CREATE UNIQUE INDEX timeline_c_key ON timeline_c (follower_id, post_id)");
            }
        }
        System.out.printf("  (%s source: %,d posts and %,d follows loaded in %.1f s)%n", peer ? "peer" : "our", d.posts, d.follows,
                (System.nanoTime() - started) / 1e9);
    }

    private static OffsetDateTime postedAt(long id) {
        return POSTED_BASE.plusSeconds(id * 60).atOffset(ZoneOffset.UTC);
    }

    private static long count(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Applies batches to one database, each in one transaction, one statement per change in order. */
    static final class Source {
        private final Connection c;
        private final PreparedStatement insertPost;
        private final PreparedStatement editPost;
        private final PreparedStatement deletePost;
        private final PreparedStatement follow;
        private final PreparedStatement unfollow;

        Source(Connection c) throws SQLException {
            this.c = c;
            insertPost = c.prepareStatement("INSERT INTO posts (id, author_id, body, posted_at) VALUES (?, ?, ?, ?)");
            editPost = c.prepareStatement("UPDATE posts SET body = ? WHERE id = ?");
            deletePost = c.prepareStatement("DELETE FROM posts WHERE id = ?");
            follow = c.prepareStatement("INSERT INTO follows (follower_id, followee_id) VALUES (?, ?)");
            unfollow = c.prepareStatement("DELETE FROM follows WHERE follower_id = ? AND followee_id = ?");
        }

        void apply(Batch b) throws SQLException {
            c.setAutoCommit(false);
            try {
                for (Op op : b.ops) {
                    PreparedStatement ps;
                    switch (op.kind) {
                        case NEW_POST -> {
                            ps = insertPost;
                            ps.setLong(1, op.a);
                            ps.setLong(2, op.b);
                            ps.setString(3, op.body);
                            ps.setObject(4, postedAt(op.a));
                        }
                        case EDIT -> {
                            ps = editPost;
                            ps.setString(1, op.body);
                            ps.setLong(2, op.a);
                        }
                        case DELETE -> {
                            ps = deletePost;
                            ps.setLong(1, op.a);
                        }
                        case FOLLOW -> {
                            ps = follow;
                            ps.setLong(1, op.a);
                            ps.setLong(2, op.b);
                        }
                        default -> {
                            ps = unfollow;
                            ps.setLong(1, op.a);
                            ps.setLong(2, op.b);
                        }
                    }
                    if (ps.executeUpdate() != 1) {
                        throw new IllegalStateException("the source did not take " + op + " (the model and the tables differ)");
                    }
                }
                c.commit();
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    /** One side's totals over one round. */
    static final class Side {
        int batches;
        long changes;
        long viewChanges;
        double nanos;
        double applyNanos;
        double waitNanos;
        double joinNanos;
        double concurrentNanos;
        double taskCpuNanos;
        double jvmCpuNanos;
        final List<Double> waits = new ArrayList<>();
        final List<Double> watermarks = new ArrayList<>();
        private Timing slowest;

        void add(Timing t) {
            batches++;
            changes += t.changes;
            viewChanges += t.viewChanges;
            nanos += t.nanos;
            applyNanos += t.applyNanos;
            waitNanos += t.waitNanos;
            joinNanos += t.joinNanos;
            concurrentNanos += t.concurrentNanos;
            taskCpuNanos += t.taskCpuNanos;
            jvmCpuNanos += t.jvmCpuNanos;
            waits.add(t.waitNanos / 1e6);
            watermarks.add(t.watermarkNanos / 1e6);
            if (slowest == null || t.nanos > slowest.nanos) {
                slowest = t;
            }
        }

        /** The slowest batch and where its time went. */
        String slowest() {
            Timing t = slowest;
            return String.format(Locale.ROOT, "%.0f ms (apply %.0f, wait %.0f, %s %.0f; %,d view changes)", t.nanos / 1e6,
                    t.applyNanos / 1e6, t.waitNanos / 1e6, t.waitNanos == 0 ? "refresh" : "join", t.joinNanos / 1e6, t.viewChanges);
        }

        double secs() {
            return nanos / 1e9;
        }

        double concurrentSecs() {
            return concurrentNanos / 1e9;
        }

        static double medianMs(List<Double> ms) {
            double[] w = ms.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            return w[w.length / 2];
        }
    }

    /** One batch through one side. */
    record Timing(int changes, int viewChanges, double nanos, double applyNanos, double waitNanos, double joinNanos,
                  double concurrentNanos, double taskCpuNanos, double jvmCpuNanos, double watermarkNanos) {
    }

    // ---------------------------------------------------------------- the peer

    /** The same tables on a database of their own, recomputed by REFRESH MATERIALIZED VIEW after each batch. */
    static final class Peer {
        private final Connection c;
        private final Source source;
        /** Whether timeline_c follows every batch: only from the concurrent batches on. */
        private boolean concurrentCurrent;

        Peer(Connection c) throws SQLException {
            this.c = c;
            this.source = new Source(c);
        }

        /** @return seconds of the first REFRESH of the plain view (the view's initial build) */
        double initialBuild() throws SQLException {
            try (Statement s = c.createStatement()) {
                long t0 = System.nanoTime();
                s.execute("REFRESH MATERIALIZED VIEW timeline");
                double secs = (System.nanoTime() - t0) / 1e9;
                s.execute("REFRESH MATERIALIZED VIEW timeline_c");
                return secs;
            }
        }

        /** Brings the concurrently refreshed view up to date (untimed) after the rounds left it behind. */
        void catchUpConcurrentView() throws SQLException {
            try (Statement s = c.createStatement()) {
                s.execute("REFRESH MATERIALIZED VIEW timeline_c");
            }
            concurrentCurrent = true;
        }

        /** Applies the batch and refreshes the plain view, then (when {@code concurrent}) the other one concurrently. */
        Timing run(Batch b, boolean concurrent) throws SQLException {
            long t0 = System.nanoTime();
            source.apply(b);
            long t1 = System.nanoTime();
            try (Statement s = c.createStatement()) {
                s.execute("REFRESH MATERIALIZED VIEW timeline");
                long t2 = System.nanoTime();
                long t3 = t2;
                if (concurrent) {
                    s.execute("REFRESH MATERIALIZED VIEW CONCURRENTLY timeline_c");
                    t3 = System.nanoTime();
                }
                return new Timing(b.ops.size(), b.expected, t2 - t0, t1 - t0, 0, t2 - t1, (t1 - t0) + (t3 - t2), 0, 0, 0);
            }
        }

        void verify(long expectedRows) throws SQLException {
            for (String view : concurrentCurrent ? List.of("timeline", "timeline_c") : List.of("timeline")) {
                long n = count(c, "SELECT count(*) FROM " + view);
                if (n != expectedRows) {
                    throw new IllegalStateException("the peer's " + view + " has " + n + " rows, the model " + expectedRows);
                }
            }
        }
    }

    // ---------------------------------------------------------------- ours

    /**
     * The table-join connector's task on a replica of the source, polled in this thread; its records applied to an
     * in-memory copy of the view (key to a digest of the row) outside the timed spans, to check it against SQL.
     */
    static final class Ours implements AutoCloseable {
        private static final String NAME = "timeline";
        private final Connection c;
        private final Source source;
        private final Map<String, String> taskProps;
        private final TableJoinSourceTask task = new TableJoinSourceTask();
        private final ExecutorService watcher = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "watermark-watcher");
            t.setDaemon(true);
            return t;
        });
        private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        private final com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        private final Map<Long, Integer> view = new HashMap<>();
        private ReplicaHandle handle;
        private boolean started;
        double buildSecs;
        double buildSnapshotSecs;
        double buildTaskCpuSecs;
        double buildJvmCpuSecs;

        Ours(BenchPostgres pg, Connection c) throws SQLException {
            this.c = c;
            this.source = new Source(c);
            Map<String, String> props = new HashMap<>();
            pg.replicaProps(NAME, "public.posts,public.follows", pg.work().resolve("replica"))
                    .forEach((k, v) -> props.put(k, v.toString()));
            props.put(TableJoinConfig.CONNECTOR_NAME, NAME);
            props.put(TableJoinConfig.TOPIC, "timeline");
            props.put(TableJoinConfig.LEFT_TABLE, "public.posts");
            props.put(TableJoinConfig.RIGHT_TABLE, "public.follows");
            props.put(TableJoinConfig.LEFT_JOIN_COLUMNS, "author_id");
            props.put(TableJoinConfig.RIGHT_JOIN_COLUMNS, "followee_id");
            props.put(TableJoinConfig.COLUMNS, "follows.follower_id, posts.id AS post_id, posts.author_id, posts.body, posts.posted_at");
            props.put(TableJoinConfig.KEY, "follower_id, post_id");
            props.put(TableJoinConfig.ENCODING, "UPSERT");
            TableJoinSourceConnector connector = new TableJoinSourceConnector();
            connector.start(props); // checks the view against the database, as Connect would
            taskProps = connector.taskConfigs(1).get(0);
            connector.stop();
        }

        /** Starts the task (its replica takes the snapshot) and polls until it returned the whole view. */
        void initialBuild(long rows) throws Exception {
            long cpu0 = os.getProcessCpuTime();
            long taskCpu0 = threads.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            task.initialize(new Context(taskProps));
            task.start(taskProps);
            started = true;
            handle = ReplicaRegistry.acquire(Map.of(ReplicaConfig.NAME, NAME));
            Future<Long> firstWatermark = watcher.submit(() ->
                    handle.watermark().await(Long.MIN_VALUE + 1, Duration.ofMinutes(30)) ? System.nanoTime() : -1L);
            long got = 0;
            long deadline = t0 + Duration.ofMinutes(30).toNanos();
            while (got < rows) {
                List<SourceRecord> records = task.poll();
                if (records != null) {
                    got += records.size();
                    applyAll(records);
                } else if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the initial build returned " + got + " of " + rows + " records; replica health "
                            + handle.health());
                }
            }
            long t1 = System.nanoTime();
            buildTaskCpuSecs = (threads.getCurrentThreadCpuTime() - taskCpu0) / 1e9;
            buildJvmCpuSecs = (os.getProcessCpuTime() - cpu0) / 1e9;
            buildSecs = (t1 - t0) / 1e9;
            buildSnapshotSecs = (firstWatermark.get() - t0) / 1e9;
            noMore("the initial build");
            verify(rows);
        }

        Timing run(Batch b) throws Exception {
            long cpu0 = os.getProcessCpuTime();
            long taskCpu0 = threads.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            source.apply(b);
            long tCommit = System.nanoTime();
            // On the source's clock, at or after the commit: once the watermark passes it, the batch is in the replica.
            long committed = handle.watermark().sourceNow();
            Future<Long> passed = watcher.submit(() ->
                    handle.watermark().await(committed, BATCH_TIMEOUT) ? System.nanoTime() : -1L);
            List<SourceRecord> records = new ArrayList<>(b.expected);
            long joinNanos = 0;
            long deadline = tCommit + BATCH_TIMEOUT.toNanos();
            while (records.size() < b.expected) {
                long p0 = System.nanoTime();
                List<SourceRecord> r = task.poll();
                long p1 = System.nanoTime();
                if (r != null && !r.isEmpty()) {
                    joinNanos += p1 - p0;
                    records.addAll(r);
                } else if (p1 > deadline) {
                    throw new IllegalStateException("a batch of " + b.ops.size() + " changes gave " + records.size() + " of its "
                            + b.expected + " view changes within " + BATCH_TIMEOUT + "; replica health " + handle.health());
                }
            }
            long tEnd = System.nanoTime();
            long taskCpu = threads.getCurrentThreadCpuTime() - taskCpu0;
            long jvmCpu = os.getProcessCpuTime() - cpu0;
            // Outside the timed span: the watermark is past the commit, so the batch's view changes are all out.
            long tPassed = passed.get(BATCH_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            if (tPassed < 0) {
                throw new IllegalStateException("the watermark did not pass the batch's commit");
            }
            if (records.size() != b.expected) {
                throw new IllegalStateException("a batch gave " + records.size() + " view changes, the model " + b.expected);
            }
            noMore("a batch");
            applyAll(records);
            // Waiting: the polls that returned nothing (the task waits for the watermark in them); the watcher's own
            // figure, from the commit until it saw the watermark pass, is reported beside it as a check.
            double wait = tEnd - tCommit - joinNanos;
            return new Timing(b.ops.size(), b.expected, tEnd - t0, tCommit - t0, wait, joinNanos, 0, taskCpu, jvmCpu,
                    tPassed - tCommit);
        }

        /** With the watermark past everything committed, one more poll must find no view change left. */
        private void noMore(String what) throws InterruptedException {
            List<SourceRecord> extra = task.poll();
            if (extra != null && !extra.isEmpty()) {
                throw new IllegalStateException(what + " gave " + extra.size() + " view changes more than expected, the first "
                        + extra.get(0));
            }
        }

        private void applyAll(List<SourceRecord> records) {
            for (SourceRecord r : records) {
                Struct key = (Struct) r.key();
                long k = viewKey(key.getInt64("follower_id"), key.getInt64("post_id"));
                Struct v = (Struct) r.value();
                if (v == null) {
                    view.remove(k);
                } else {
                    view.put(k, Objects.hash(v.getInt64("author_id"), v.getString("body")));
                }
            }
        }

        private static long viewKey(long follower, long post) {
            return follower << 32 | post;
        }

        /** The view built from the records is the join SQL computes on the source, row by row. */
        void verify(long expectedRows) throws SQLException {
            long rows = 0;
            List<String> wrong = new ArrayList<>();
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.setFetchSize(10_000);
                try (ResultSet rs = s.executeQuery("SELECT f.follower_id, p.id, p.author_id, p.body FROM posts p JOIN follows f"
                        + " ON f.followee_id = p.author_id")) {
                    while (rs.next()) {
                        rows++;
                        long k = viewKey(rs.getLong(1), rs.getLong(2));
                        Integer digest = view.get(k);
                        if ((digest == null || digest != Objects.hash(rs.getLong(3), rs.getString(4))) && wrong.size() < 5) {
                            wrong.add("(" + rs.getLong(1) + ", " + rs.getLong(2) + ")" + (digest == null ? " missing" : " differs"));
                        }
                    }
                }
            } finally {
                c.commit();
                c.setAutoCommit(true);
            }
            if (!wrong.isEmpty() || rows != view.size() || rows != expectedRows) {
                throw new IllegalStateException("the view from the task's records (" + view.size() + " rows) is not the join on the"
                        + " source (" + rows + " rows, the model " + expectedRows + "): " + wrong);
            }
        }

        @Override
        public void close() {
            watcher.shutdownNow();
            if (handle != null) {
                handle.close();
            }
            if (started) {
                task.stop();
            }
        }
    }

    /** What Connect gives a task: its configuration and an offset reader with nothing stored. */
    private record Context(Map<String, String> configs) implements SourceTaskContext {
        @Override
        public OffsetStorageReader offsetStorageReader() {
            return new OffsetStorageReader() {
                @Override
                public <T> Map<String, Object> offset(Map<String, T> partition) {
                    return null;
                }

                @Override
                public <T> Map<Map<String, T>, Map<String, Object>> offsets(Collection<Map<String, T>> partitions) {
                    return Map.of();
                }
            };
        }

        @Override
        public PluginMetrics pluginMetrics() {
            return null;
        }
    }
}
