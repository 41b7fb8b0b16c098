package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.Waits;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Faults 36 and 37 on real parts: the timeline view ({@link Timeline}) published to a topic of one partition and
 * applied by the sink with {@code changelog.group.header}, while the workload moves posts to other authors, follows,
 * unfollows, inserts and deletes posts, often both tables in one transaction. Every source state satisfies the join's
 * invariant: a post has one view row per follower of its author, so every post of one author has the same number of
 * rows, all naming that author. A reader polls the target table in its own transactions all along; each read must
 * satisfy the invariant, which any part of a source transaction applied alone breaks (a moved post with old and new
 * rows, or neither; a follow that reached some of its followee's posts). Small batches on both sides (Kafka
 * transactions of the view and flushes of the sink) would cut source transactions everywhere without the groups:
 * with {@code changelog.group.header} left empty this test fails (checked by hand, reads seeing an author's posts with
 * different row counts).
 */
@ExtendWith(PrintLogsOnFailure.class)
class TableJoinAtomicityIT {

    private static final String VIEW = "timeline-view-atomic";
    private static final String SINK = "timeline-sink-atomic";
    private static final String TABLE = "timeline_atomic";
    private static final String GROUP_END_HEADER = "asof.view.group.end";
    private static final Duration WORKLOAD = Duration.ofSeconds(15);
    private static final Duration PAUSE_BETWEEN_TRANSACTIONS = Duration.ofMillis(40);

    private static TestPipeline pipeline;
    private static ConnectWorker worker;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("table-join-atomic");
        worker = pipeline.distributedWorker("worker", "tj-atomic", Timeline.workerProperties());
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void aConcurrentReaderNeverSeesPartOfASourceTransaction() throws Exception {
        long seed = System.nanoTime();
        System.out.println("TableJoinAtomicityIT workload from seed " + seed);
        Timeline timeline = new Timeline(pipeline.postgres(), pipeline.broker(), "tja", 8, seed);
        timeline.createSource(40, 25);
        Map<String, String> values = timeline.placeholders(pipeline.work().resolve("secrets"), pipeline.work().resolve("replicas"));
        timeline.createTargetTable(TABLE);
        pipeline.broker().createTopic(TABLE, 1);
        Map<String, String> view = timeline.viewConfig(values, TABLE, "UPSERT", TABLE);
        view.put("view.batch.size", "16"); // Kafka transactions smaller than many fan-outs: they cut source transactions
        Map<String, String> sink = timeline.sinkConfig(values, TABLE, TABLE, "UPSERT");
        sink.put("batch.size", "8");
        sink.put("batch.linger.ms", "0");
        sink.put("changelog.group.header", GROUP_END_HEADER);
        worker.rest().putConnectorConfig(VIEW, view);
        worker.rest().putConnectorConfig(SINK, sink);
        worker.rest().awaitRunning(VIEW, 1, Duration.ofSeconds(90));
        worker.rest().awaitRunning(SINK, 1, Duration.ofSeconds(90));
        // The initial load is not one transaction of the source: read from its end on.
        timeline.awaitQuiescent(TABLE, Duration.ofSeconds(2), Duration.ofSeconds(60));

        AtomicBoolean stopWorkload = new AtomicBoolean();
        AtomicBoolean stopReader = new AtomicBoolean();
        Reader reader = new Reader(pipeline.postgres(), timeline.targetDb());
        CompletableFuture<Void> reading = CompletableFuture.runAsync(() -> reader.readUntil(stopReader));
        CompletableFuture<Long> writing = CompletableFuture.supplyAsync(() -> {
            try {
                return timeline.runUntil(stopWorkload, PAUSE_BETWEEN_TRANSACTIONS);
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        });
        Waits.pause(WORKLOAD);
        stopWorkload.set(true);
        long transactions = writing.get(30, TimeUnit.SECONDS);
        // The reader goes on while the sink applies the tail, which comes in groups too.
        timeline.awaitQuiescent(TABLE, Duration.ofSeconds(2), Duration.ofSeconds(60));
        stopReader.set(true);
        reading.get(30, TimeUnit.SECONDS);

        System.out.println("TableJoinAtomicityIT: " + timeline.coverage() + "; " + reader);
        assertThat(reader.violations).as("reads that saw part of a source transaction (%s)", reader).isEmpty();
        assertThat(reader.reads).as("reads of the target").isGreaterThan(100);
        assertThat(reader.readsAfterWrites).as("reads taken after more writes were applied").isGreaterThan(50);
        assertThat(reader.maxRowsPerPost).as("the most view rows of one post in a read").isGreaterThanOrEqualTo(3);
        assertThat(transactions).as("source transactions of the workload").isGreaterThan(100);
        assertThat(timeline.coverage()).contains("change author", "follow", "unfollow", "delete post", "insert post");
    }

    /**
     * Reads the target in its own transactions (REPEATABLE READ: the rows and the write log's length in one snapshot)
     * and checks the invariant on each read: every post's rows name one author, and all posts of an author have the
     * same number of rows (its follower count).
     */
    private static final class Reader {
        private final PostgresServer postgres;
        private final String database;
        final List<String> violations = new ArrayList<>();
        long reads;
        long violatingReads;
        long readsAfterWrites;
        long maxRowsPerPost;
        private long lastWrites = -1;
        private boolean violated;

        Reader(PostgresServer postgres, String database) {
            this.postgres = postgres;
            this.database = database;
        }

        void readUntil(AtomicBoolean stop) {
            try (Connection c = postgres.connect(database)) {
                c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
                c.setAutoCommit(false);
                while (!stop.get()) {
                    readOnce(c);
                    c.commit();
                }
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }

        private void readOnce(Connection c) throws SQLException {
            violated = false;
            Map<Long, Long> authorOfPost = new HashMap<>();
            Map<Long, Long> rowsOfPost = new HashMap<>();
            long writes;
            try (Statement s = c.createStatement()) {
                try (ResultSet rs = s.executeQuery("SELECT post_id, author_id, count(*) FROM "
                        + PostgresServer.quoteIdentifier(TABLE) + " GROUP BY post_id, author_id")) {
                    while (rs.next()) {
                        long post = rs.getLong(1);
                        Long before = authorOfPost.put(post, rs.getLong(2));
                        if (before != null) {
                            violate("post " + post + " has rows of authors " + before + " and " + rs.getLong(2));
                        }
                        rowsOfPost.merge(post, rs.getLong(3), Long::sum);
                    }
                }
                try (ResultSet rs = s.executeQuery("SELECT coalesce(max(seq), 0) FROM "
                        + PostgresServer.quoteIdentifier(TABLE + "_writes"))) {
                    rs.next();
                    writes = rs.getLong(1);
                }
            }
            Map<Long, Long> rowsPerAuthorPost = new HashMap<>();
            Map<Long, Long> firstPost = new HashMap<>();
            for (Map.Entry<Long, Long> e : rowsOfPost.entrySet()) {
                long author = authorOfPost.get(e.getKey());
                Long expected = rowsPerAuthorPost.putIfAbsent(author, e.getValue());
                firstPost.putIfAbsent(author, e.getKey());
                if (expected != null && !expected.equals(e.getValue())) {
                    violate("author " + author + ": post " + firstPost.get(author) + " has " + expected + " rows, post "
                            + e.getKey() + " has " + e.getValue());
                }
                maxRowsPerPost = Math.max(maxRowsPerPost, e.getValue());
            }
            reads++;
            if (violated) {
                violatingReads++;
            }
            if (lastWrites >= 0 && writes != lastWrites) {
                readsAfterWrites++;
            }
            lastWrites = writes;
        }

        private void violate(String what) {
            violated = true;
            if (violations.size() < 10) {
                violations.add("read " + reads + ": " + what);
            }
        }

        @Override
        public String toString() {
            return reads + " reads, " + readsAfterWrites + " after more writes, up to " + maxRowsPerPost
                    + " rows per post, " + violatingReads + " reads breaking the invariant, e.g. " + violations;
        }
    }
}
