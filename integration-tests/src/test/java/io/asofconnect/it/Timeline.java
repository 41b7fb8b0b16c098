package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.TestPaths;
import io.asofconnect.it.harness.Waits;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The timeline scenario of the table-join tests: {@code posts} and {@code follows} in a source database (logical
 * decoding on), a seeded random workload of changes to both, several of both tables in one transaction; the view
 * {@code timeline} = posts joined with follows on {@code followee_id = author_id}, maintained by the table-join
 * source connector and applied to a target table by the sink; and the independent oracle, the same join run as SQL
 * on the source database, compared as sets with the target table's rows at quiescent points (the workload stopped,
 * the target equal to the oracle and no longer being written).
 *
 * <p>Each target table gets a write log ({@link #createTargetTable}): a row trigger records every INSERT, UPDATE
 * and DELETE the sink applies, with the row it wrote, so a test can hold the writes per view key against the records
 * the view produced for that key ({@link #producedPerKey}, read committed).
 */
final class Timeline {

    static final String VIEW_CONNECTOR_CLASS = "io.asofconnect.tablejoin.TableJoinSourceConnector";
    static final String VIEW_EXAMPLE = "distributed/timeline-view.json";
    static final String SINK_EXAMPLE = "distributed/timeline-sink.json";
    static final String WORKER_EXAMPLE = "distributed/worker-exactly-once-source.properties";
    /** The operation field of the RETRACT encoding, as the view writes it by default. */
    static final String OP_FIELD = "__op";

    /** The oracle: the view's definition as SQL, run on the source database. */
    static final String ORACLE = "SELECT f.follower_id, p.id AS post_id, p.author_id, p.body, p.posted_at"
            + " FROM posts p JOIN follows f ON f.followee_id = p.author_id";

    private static final ObjectMapper JSON = new ObjectMapper();
    /** Posting times near now, so that no representation of them (millis, micros, text) is ambiguous. */
    private static final long EPOCH_BASE_MS = 1_780_000_000_000L;

    /** A row of the view; {@code postedAtMicros} null for a NULL posted_at. */
    record Row(long followerId, long postId, long authorId, String body, Long postedAtMicros) implements Comparable<Row> {
        String key() {
            return followerId + "/" + postId;
        }

        @Override
        public int compareTo(Row o) {
            int c = Long.compare(followerId, o.followerId);
            return c != 0 ? c : Long.compare(postId, o.postId);
        }
    }

    /** One write to a view key: a delete, or the row's author and body after an insert or update. */
    record Write(boolean delete, Long authorId, String body) {
        static final Write DELETE = new Write(true, null, null);

        @Override
        public String toString() {
            return delete ? "D" : "W(" + authorId + "," + body + ")";
        }
    }

    private final PostgresServer postgres;
    private final KafkaBroker broker;
    private final String sourceDb;
    private final String targetDb;
    private final int users;
    private final Random random;
    /** The source as the workload left it: post id -> author, and the follow pairs "follower/followee". */
    private final Map<Long, Long> posts = new TreeMap<>();
    private final Set<String> follows = new TreeSet<>();
    private long nextPostId = 1;
    private long bodyVersion;
    private final AtomicLong transactions = new AtomicLong();
    private final AtomicLong mixedTransactions = new AtomicLong();
    private final Map<String, Long> kinds = new TreeMap<>();

    /** {@code name} names both databases; {@code users} authors and followers; {@code seed} drives the workload. */
    Timeline(PostgresServer postgres, KafkaBroker broker, String name, int users, long seed) {
        this.postgres = postgres;
        this.broker = broker;
        this.sourceDb = name + "_social";
        this.targetDb = name + "_feeds";
        this.users = users;
        this.random = new Random(seed);
    }

    String sourceDb() {
        return sourceDb;
    }

    String targetDb() {
        return targetDb;
    }

    // ---- configuration ----

    /** The lines of {@value #WORKER_EXAMPLE}: what a worker needs to run the view with exactly-once support. */
    static Map<String, String> workerProperties() {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(TestPaths.configExamples().resolve(WORKER_EXAMPLE), StandardCharsets.UTF_8)) {
            p.load(r);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, String> out = new TreeMap<>();
        p.stringPropertyNames().forEach(k -> out.put(k, p.getProperty(k)));
        return out;
    }

    /** Placeholder values of the two examples; the replica's store goes under {@code replicaDir}. */
    Map<String, String> placeholders(Path secretsDir, Path replicaDir) {
        try {
            Files.createDirectories(replicaDir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, String> values = postgres.placeholders(secretsDir);
        values.put("SOURCE_DB", sourceDb);
        values.put("TARGET_DB", targetDb);
        values.put("REPLICA_DIR", replicaDir.toString());
        return values;
    }

    /**
     * The documented view, publishing to {@code topic} in {@code encoding}, with its own replica ({@code replica}
     * names it, its slot and its store directory under the placeholders' REPLICA_DIR).
     */
    Map<String, String> viewConfig(Map<String, String> placeholders, String topic, String encoding, String replica) {
        Map<String, String> c = new LinkedHashMap<>(ConfigTemplates.connectorConfig(VIEW_EXAMPLE, placeholders));
        c.put("view.topic", topic);
        c.put("view.encoding", encoding);
        c.put("replica.name", replica);
        c.put("replica.slot.name", "asof_" + replica);
        c.put("replica.path", Path.of(placeholders.get("REPLICA_DIR")).resolve(replica).toString());
        return c;
    }

    /** The documented sink, applying {@code topic} to {@code table}; for RETRACT with the operation field. */
    Map<String, String> sinkConfig(Map<String, String> placeholders, String topic, String table, String encoding) {
        Map<String, String> c = new LinkedHashMap<>(ConfigTemplates.connectorConfig(SINK_EXAMPLE, placeholders));
        c.put("topics", topic);
        c.put("table.name.format", table);
        if (encoding.equals("RETRACT")) {
            c.put("changelog.op.field", OP_FIELD);
        }
        return c;
    }

    // ---- source: tables, seed, workload ----

    /** Creates both databases and the source tables, seeded with posts and follows (the view's initial snapshot). */
    void createSource(int seedPosts, int seedFollows) throws SQLException {
        postgres.createDatabase(sourceDb);
        postgres.createDatabase(targetDb);
        try (Connection c = postgres.connect(sourceDb); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE posts (id bigint PRIMARY KEY, author_id bigint NOT NULL, body text, posted_at timestamptz)");
            s.execute("CREATE TABLE follows (follower_id bigint, followee_id bigint, PRIMARY KEY (follower_id, followee_id))");
            c.setAutoCommit(false);
            for (int i = 0; i < seedPosts; i++) {
                insertPost(c);
            }
            int target = Math.min(seedFollows, users * (users - 1) / 2);
            while (follows.size() < target) {
                follow(c);
            }
            c.commit();
        }
    }

    /**
     * {@code count} transactions of one to four changes each, picked at random: new posts (some authors far more
     * often than others, so fan-out is skewed), edits of a post's body, moves of a post to another author, deleted
     * posts, follows (a follow that exists already, or of oneself, is skipped) and unfollows; about half the
     * transactions change both tables. Returns how many committed.
     */
    synchronized long run(int count) throws SQLException {
        try (Connection c = postgres.connect(sourceDb)) {
            c.setAutoCommit(false);
            for (int i = 0; i < count; i++) {
                transaction(c);
            }
        }
        return count;
    }

    /** Runs transactions until {@code stop} is set, pausing {@code pause} between them; returns how many. */
    long runUntil(AtomicBoolean stop, Duration pause) throws SQLException {
        long n = 0;
        try (Connection c = postgres.connect(sourceDb)) {
            c.setAutoCommit(false);
            while (!stop.get()) {
                synchronized (this) {
                    transaction(c);
                }
                n++;
                Waits.pause(pause);
            }
        }
        return n;
    }

    long transactions() {
        return transactions.get();
    }

    /** What the workload did so far: transactions, those changing both tables, and changes by kind. */
    synchronized String coverage() {
        return transactions.get() + " transactions (" + mixedTransactions.get() + " changing both tables), " + kinds
                + "; now " + posts.size() + " posts, " + follows.size() + " follows";
    }

    private void transaction(Connection c) throws SQLException {
        int changes = 1 + random.nextInt(4);
        boolean postsTouched = false;
        boolean followsTouched = false;
        for (int i = 0; i < changes; i++) {
            int pick = random.nextInt(100);
            if (pick < 22 || posts.isEmpty()) {
                insertPost(c);
                postsTouched = true;
            } else if (pick < 42) {
                editPost(c);
                postsTouched = true;
            } else if (pick < 50) {
                movePost(c);
                postsTouched = true;
            } else if (pick < 58) {
                deletePost(c);
                postsTouched = true;
            } else if (pick < 86 || follows.isEmpty()) {
                follow(c);
                followsTouched = true;
            } else {
                unfollow(c);
                followsTouched = true;
            }
        }
        c.commit();
        transactions.incrementAndGet();
        if (postsTouched && followsTouched) {
            mixedTransactions.incrementAndGet();
        }
    }

    /** Skewed: user 1 writes about a third of the posts, user 2 a sixth, the rest share the remainder. */
    private long author() {
        int r = random.nextInt(6);
        return r < 2 ? 1 : r < 3 ? 2 : 1 + random.nextInt(users);
    }

    /** Every body is unique, so a body names one version of one post (the write-count check relies on it). */
    private String body(long postId) {
        return random.nextInt(20) == 0 ? null : "p" + postId + " v" + (++bodyVersion);
    }

    private void insertPost(Connection c) throws SQLException {
        long id = nextPostId++;
        long author = author();
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO posts VALUES (?, ?, ?,"
                + " CASE WHEN ? THEN NULL ELSE TIMESTAMPTZ 'epoch' + ? * INTERVAL '1 millisecond' END)")) {
            ps.setLong(1, id);
            ps.setLong(2, author);
            ps.setString(3, body(id));
            ps.setBoolean(4, random.nextInt(25) == 0);
            ps.setLong(5, EPOCH_BASE_MS + random.nextInt(86_400_000));
            ps.executeUpdate();
        }
        posts.put(id, author);
        count("insert post");
    }

    private long anyPost() {
        List<Long> ids = new ArrayList<>(posts.keySet());
        return ids.get(random.nextInt(ids.size()));
    }

    private void editPost(Connection c) throws SQLException {
        long id = anyPost();
        try (PreparedStatement ps = c.prepareStatement("UPDATE posts SET body = ? WHERE id = ?")) {
            ps.setString(1, body(id));
            ps.setLong(2, id);
            ps.executeUpdate();
        }
        count("edit body");
    }

    private void movePost(Connection c) throws SQLException {
        long id = anyPost();
        long author = author();
        try (PreparedStatement ps = c.prepareStatement("UPDATE posts SET author_id = ?, body = ? WHERE id = ?")) {
            ps.setLong(1, author);
            ps.setString(2, body(id));
            ps.setLong(3, id);
            ps.executeUpdate();
        }
        posts.put(id, author);
        count("change author");
    }

    private void deletePost(Connection c) throws SQLException {
        long id = anyPost();
        try (PreparedStatement ps = c.prepareStatement("DELETE FROM posts WHERE id = ?")) {
            ps.setLong(1, id);
            ps.executeUpdate();
        }
        posts.remove(id);
        count("delete post");
    }

    private void follow(Connection c) throws SQLException {
        long follower = 1 + random.nextInt(users);
        // Popular authors gain followers faster: the skew of fan-out goes both ways.
        long followee = author();
        if (follower == followee || !follows.add(follower + "/" + followee)) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO follows VALUES (?, ?)")) {
            ps.setLong(1, follower);
            ps.setLong(2, followee);
            ps.executeUpdate();
        }
        count("follow");
    }

    private void unfollow(Connection c) throws SQLException {
        List<String> pairs = new ArrayList<>(follows);
        String pair = pairs.get(random.nextInt(pairs.size()));
        String[] ids = pair.split("/");
        try (PreparedStatement ps = c.prepareStatement("DELETE FROM follows WHERE follower_id = ? AND followee_id = ?")) {
            ps.setLong(1, Long.parseLong(ids[0]));
            ps.setLong(2, Long.parseLong(ids[1]));
            ps.executeUpdate();
        }
        follows.remove(pair);
        count("unfollow");
    }

    private void count(String kind) {
        kinds.merge(kind, 1L, Long::sum);
    }

    // ---- oracle and target ----

    /** The view as the oracle computes it on the source database now. */
    List<Row> oracle() throws SQLException {
        return rows(sourceDb, "SELECT follower_id, post_id, author_id, body,"
                + " (extract(epoch FROM posted_at) * 1000000)::bigint FROM (" + ORACLE + ") v");
    }

    /**
     * Creates the target table {@code table} (the view's columns, keyed by the view key) and its write log
     * {@code <table>_writes}: a row trigger appends every INSERT, UPDATE and DELETE with the key, the operation and
     * the row written, in the transaction that wrote it (a rolled-back flush leaves no entry).
     */
    void createTargetTable(String table) throws SQLException {
        String t = PostgresServer.quoteIdentifier(table);
        String log = PostgresServer.quoteIdentifier(table + "_writes");
        String fn = PostgresServer.quoteIdentifier(table + "_writes_fn");
        try (Connection c = postgres.connect(targetDb); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + t + " (follower_id bigint, post_id bigint, author_id bigint, body text,"
                    + " posted_at timestamptz, PRIMARY KEY (follower_id, post_id))");
            s.execute("CREATE TABLE " + log + " (seq bigserial PRIMARY KEY, follower_id bigint NOT NULL,"
                    + " post_id bigint NOT NULL, op text NOT NULL, author_id bigint, body text)");
            s.execute("CREATE FUNCTION " + fn + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                    + " IF TG_OP = 'DELETE' THEN"
                    + "   INSERT INTO " + log + " (follower_id, post_id, op) VALUES (OLD.follower_id, OLD.post_id, TG_OP);"
                    + " ELSE"
                    + "   INSERT INTO " + log + " (follower_id, post_id, op, author_id, body)"
                    + "   VALUES (NEW.follower_id, NEW.post_id, TG_OP, NEW.author_id, NEW.body);"
                    + " END IF; RETURN NULL; END $$");
            s.execute("CREATE TRIGGER " + PostgresServer.quoteIdentifier(table + "_writes_trg")
                    + " AFTER INSERT OR UPDATE OR DELETE ON " + t + " FOR EACH ROW EXECUTE FUNCTION " + fn + "()");
        }
    }

    List<Row> target(String table) throws SQLException {
        return rows(targetDb, "SELECT follower_id, post_id, author_id, body,"
                + " (extract(epoch FROM posted_at) * 1000000)::bigint FROM " + PostgresServer.quoteIdentifier(table));
    }

    /** Writes applied to {@code table} so far (its write log's length). */
    long writes(String table) throws SQLException {
        try (Connection c = postgres.connect(targetDb); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM " + PostgresServer.quoteIdentifier(table + "_writes"))) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Per view key, the writes applied to {@code table}, in the order they committed. */
    Map<String, List<Write>> appliedPerKey(String table) throws SQLException {
        Map<String, List<Write>> out = new TreeMap<>();
        try (Connection c = postgres.connect(targetDb); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT follower_id, post_id, op, author_id, body FROM "
                     + PostgresServer.quoteIdentifier(table + "_writes") + " ORDER BY seq")) {
            while (rs.next()) {
                Write w = rs.getString(3).equals("DELETE") ? Write.DELETE
                        : new Write(false, rs.getObject(4, Long.class), rs.getString(5));
                out.computeIfAbsent(rs.getLong(1) + "/" + rs.getLong(2), k -> new ArrayList<>()).add(w);
            }
        }
        return out;
    }

    private List<Row> rows(String database, String sql) throws SQLException {
        List<Row> rows = new ArrayList<>();
        try (Connection c = postgres.connect(database); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                rows.add(new Row(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getString(4), rs.getObject(5, Long.class)));
            }
        }
        rows.sort(null);
        return rows;
    }

    /**
     * Waits (bounded) for a quiescent point of {@code table}: the workload must be stopped by the caller; then the
     * table must equal the oracle and stay so, with no write applied, for {@code settle} (longer than a source poll
     * plus a sink linger, so that a change still in flight would show). Fails naming the differences.
     */
    void awaitQuiescent(String table, Duration settle, Duration timeout) throws SQLException {
        Instant deadline = Instant.now().plus(timeout);
        List<Row> expected = oracle();
        long stableSinceWrites = -1;
        Instant stableSince = null;
        List<Row> actual = List.of();
        while (Instant.now().isBefore(deadline)) {
            actual = target(table);
            long writes = writes(table);
            if (actual.equals(expected)) {
                if (stableSince == null || writes != stableSinceWrites) {
                    stableSince = Instant.now();
                    stableSinceWrites = writes;
                } else if (Duration.between(stableSince, Instant.now()).compareTo(settle) >= 0) {
                    assertThat(oracle()).as("the source changed during the wait: stop the workload first").isEqualTo(expected);
                    return;
                }
            } else {
                stableSince = null;
            }
            Waits.pause(Duration.ofMillis(300));
        }
        throw new AssertionError("Timed out after " + timeout + " waiting for " + table + " to equal the SQL join and stay"
                + " so for " + settle + ": " + difference(expected, actual));
    }

    /** Asserts {@code actual} equals {@code expected} as sets of rows, naming the first differences. */
    static void assertSameRows(String what, List<Row> expected, List<Row> actual) {
        if (!new LinkedHashSet<>(actual).equals(new LinkedHashSet<>(expected)) || actual.size() != expected.size()) {
            throw new AssertionError(what + ": " + difference(expected, actual));
        }
    }

    static String difference(List<Row> expected, List<Row> actual) {
        Set<Row> missing = new TreeSet<>(expected);
        actual.forEach(missing::remove);
        Set<Row> unexpected = new TreeSet<>(actual);
        expected.forEach(unexpected::remove);
        return actual.size() + " rows, expected " + expected.size() + "; " + missing.size() + " missing, e.g. "
                + missing.stream().limit(8).toList() + "; " + unexpected.size() + " unexpected, e.g. "
                + unexpected.stream().limit(8).toList();
    }

    // ---- the view's topic ----

    /**
     * Per view key, the changes the view committed to {@code topic} (a read_committed consumer, from the start to the
     * last stable offset), in partition order: a tombstone or a RETRACT -U/-D is a delete, anything else a write of
     * the record's author and body. Records of aborted transactions (a killed task's) are not seen.
     */
    Map<String, List<Write>> producedPerKey(String topic, Duration timeout) {
        Map<String, List<Write>> out = new TreeMap<>();
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "it-view-reader-" + UUID.randomUUID());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, timeout).stream()
                    .map(info -> new TopicPartition(topic, info.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, timeout);
            Instant deadline = Instant.now().plus(timeout);
            while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                if (Instant.now().isAfter(deadline)) {
                    throw new AssertionError("Timed out reading " + topic + " to its last stable offsets " + end);
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    out.computeIfAbsent(viewKey(r.key()), k -> new ArrayList<>()).add(change(r.value()));
                }
            }
        }
        return out;
    }

    /** "follower/post" from a JSON key, with or without the converter's schema envelope. */
    private static String viewKey(byte[] key) {
        JsonNode k = payload(key);
        if (k == null) {
            throw new AssertionError("a view record without a key");
        }
        return k.path("follower_id").asLong() + "/" + k.path("post_id").asLong();
    }

    private static Write change(byte[] value) {
        JsonNode v = payload(value);
        if (v == null) {
            return Write.DELETE;
        }
        String op = v.path(OP_FIELD).asText(null);
        if ("-U".equals(op) || "-D".equals(op)) {
            return Write.DELETE;
        }
        JsonNode body = v.get("body");
        return new Write(false, v.path("author_id").asLong(), body == null || body.isNull() ? null : body.asText());
    }

    private static JsonNode payload(byte[] bytes) {
        if (bytes == null) {
            return null;
        }
        try {
            JsonNode root = JSON.readTree(bytes);
            if (root.has("schema") && root.has("payload")) {
                root = root.get("payload");
            }
            return root == null || root.isNull() ? null : root;
        } catch (IOException e) {
            throw new UncheckedIOException("a view record that is not JSON", e);
        }
    }

    /**
     * Asserts that, per view key, the writes applied to the target are the changes the view produced for it, in
     * their order, each at most once: the applied list must be a subsequence of the produced one. The sink may apply
     * fewer (an upsert batch keeps the last change per key, and a delete of a row that is not there fires no trigger)
     * but never one twice or out of order. Returns the totals {applied, produced}.
     */
    /**
     * The view never writes a key's row twice in a row: the delta rule emits an update only when the row changed, an
     * insert only for a row the view lacks and a delete only for one it has. So two equal changes in a row for one key in
     * the committed topic are one change produced twice (a restart that resumed before its last committed record).
     */
    static void assertNoChangeProducedTwice(Map<String, List<Write>> produced) {
        List<String> problems = new ArrayList<>();
        for (Map.Entry<String, List<Write>> e : produced.entrySet()) {
            List<Write> w = e.getValue();
            for (int i = 1; i < w.size(); i++) {
                if (w.get(i).equals(w.get(i - 1))) {
                    problems.add(e.getKey() + ": " + w);
                    break;
                }
            }
        }
        assertThat(problems).as("view keys with one change committed twice in a row").isEmpty();
    }

    static long[] assertAppliedAtMostOnce(Map<String, List<Write>> applied, Map<String, List<Write>> produced) {
        long appliedTotal = 0;
        long producedTotal = 0;
        List<String> problems = new ArrayList<>();
        for (Map.Entry<String, List<Write>> e : applied.entrySet()) {
            List<Write> from = produced.getOrDefault(e.getKey(), List.of());
            if (!isSubsequence(e.getValue(), from)) {
                problems.add(e.getKey() + ": applied " + e.getValue() + ", produced " + from);
            }
            appliedTotal += e.getValue().size();
        }
        for (List<Write> w : produced.values()) {
            producedTotal += w.size();
        }
        if (!problems.isEmpty()) {
            throw new AssertionError(problems.size() + " view keys whose applied writes are not the produced changes, each"
                    + " at most once and in order, e.g. " + problems.stream().limit(5).toList());
        }
        return new long[] {appliedTotal, producedTotal};
    }

    static boolean isSubsequence(List<Write> sub, List<Write> of) {
        int j = 0;
        for (Write w : sub) {
            while (j < of.size() && !Objects.equals(of.get(j), w)) {
                j++;
            }
            if (j == of.size()) {
                return false;
            }
            j++;
        }
        return true;
    }
}
