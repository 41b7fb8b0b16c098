package io.asofconnect.sink;

import io.asofconnect.writer.testing.TargetDatabase;

import io.asofconnect.sink.config.ExactlyOnceJdbcSinkConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.createEventTable;
import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.createMixedBatchTable;
import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.events;
import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.range;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** The target restarted, its backend killed, its COMMIT reply lost: every record still lands exactly once. */
class TargetOutageTest {
    static TargetDatabase db;

    @BeforeAll
    static void startDatabase() throws Exception {
        db = TargetDatabase.start();
        ExactlyOnceJdbcSinkTaskTest.db = db;
    }

    @AfterAll
    static void stopDatabase() throws Exception {
        db.close();
    }

    @Test
    void aRestartOfTheTargetMidBatchIsRetriedAndWritesEachRecordOnce() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("restart");
        createEventTable(topic);
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(ExactlyOnceJdbcSinkTaskTest.unique("restart_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.BATCH_SIZE, "10");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(events(topic, 0, 0, 10));
            db.stop();
            int[] attempts = {0};
            d.deliver(events(topic, 0, 10, 25), () -> {
                if (++attempts[0] == 2) {
                    try {
                        db.restart();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }
            });
            assertThat(d.retriableFailures).isGreaterThanOrEqualTo(2);
            assertThat(d.commit()).containsEntry(tp, 25L);
        }
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" ORDER BY seq")).containsExactlyElementsOf(range(1, 25));
    }

    @Test
    void aRestartWhileTheFlushTransactionIsOpenIsRetriedAndWritesEachRecordOnce() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("restart_open");
        createEventTable(topic);
        String name = ExactlyOnceJdbcSinkTaskTest.unique("restart_open_sink");
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(name);
        TopicPartition tp = new TopicPartition(topic, 0);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(events(topic, 0, 0, 4));
            d.commit();
            d.deliver(events(topic, 0, 4, 12));
            Connection locker = db.connect();
            locker.setAutoCommit(false);
            try (Statement s = locker.createStatement()) {
                s.execute("LOCK TABLE \"" + topic + "\" IN ACCESS EXCLUSIVE MODE");
            }
            Future<Map<TopicPartition, Long>> flush = pool.submit(d::commit);
            String blocked = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'asof-connect sink " + name + "' AND wait_event_type = 'Lock'";
            await().atMost(30, TimeUnit.SECONDS).until(() -> db.scalar(blocked) == 1);
            db.stop();
            assertThat(flush.get(30, TimeUnit.SECONDS)).as("the interrupted flush reports only what committed").containsEntry(tp, 4L);
            locker.close();
            db.restart();
            d.deliver(events(topic, 0, 4, 12));
            assertThat(d.commit()).containsEntry(tp, 12L);
        } finally {
            pool.shutdownNow();
        }
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" ORDER BY seq")).containsExactlyElementsOf(range(1, 12));
    }

    @Test
    void aFlushRetriedAfterItReportedABadRecordDoesNotReportItAgain() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("errant_retry");
        createMixedBatchTable(topic);
        String name = ExactlyOnceJdbcSinkTaskTest.unique("errant_retry_sink");
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(name);
        p.put(ExactlyOnceJdbcSinkConfig.BATCH_SIZE, "5");
        TopicPartition tp = new TopicPartition(topic, 0);
        ExactlyOnceJdbcSinkTaskTest.CollectingReporter collecting = new ExactlyOnceJdbcSinkTaskTest.CollectingReporter(name);
        boolean[] killed = {false};
        // The first report kills the sink's backend: the flush that reported rolls back and is retried.
        org.apache.kafka.connect.sink.ErrantRecordReporter killing = (record, error) -> {
            Future<Void> done = collecting.report(record, error);
            if (!killed[0]) {
                killed[0] = true;
                try {
                    db.execute("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = 'asof-connect sink " + name + "'");
                } catch (java.sql.SQLException e) {
                    throw new AssertionError(e);
                }
            }
            return done;
        };
        try (SinkDriver d = new SinkDriver(p, killing).open(tp)) {
            d.deliver(ExactlyOnceJdbcSinkTaskTest.mixedBatch(topic));
            assertThat(d.retriableFailures).as("the flush was retried").isEqualTo(1);
            assertThat(d.commit()).containsEntry(tp, 5L);
        }
        assertThat(collecting.records).extracting(org.apache.kafka.connect.sink.SinkRecord::kafkaOffset).containsExactly(1L, 3L);
        assertThat(collecting.nextOffsetAtReport).allMatch(o -> o <= 1L);
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" ORDER BY seq")).containsExactly("1", "3", "5");
    }

    /** A task whose open() gives up after {@code budgetMs}, instead of the production bound. */
    static SinkDriver withOpenBudget(Map<String, String> p, long budgetMs) {
        return new SinkDriver(new ExactlyOnceJdbcSinkTask(props -> {
            throw new AssertionError("no enrichment in this test");
        }, budgetMs), p, null);
    }

    @Test
    void takingPartitionsOverGivesUpWithinTheOpenBoundEvenWithManyRetriesLeft() throws Exception {
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(ExactlyOnceJdbcSinkTaskTest.unique("open_bound_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.MAX_RETRIES, "100000");
        p.put(ExactlyOnceJdbcSinkConfig.RETRY_BACKOFF_MS, "100");
        TopicPartition tp = new TopicPartition(ExactlyOnceJdbcSinkTaskTest.unique("open_bound"), 0);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (SinkDriver first = new SinkDriver(p, null).open(tp); Connection locker = db.connect()) {
            // Another session holds the partition's offsets row: each claim waits on its lock until cancelled.
            locker.setAutoCommit(false);
            try (Statement s = locker.createStatement()) {
                s.execute("SELECT * FROM asof_connect_offsets WHERE connector_name = '" + p.get("name") + "' FOR UPDATE");
            }
            try (SinkDriver d = withOpenBudget(p, 1_500)) {
                long start = System.nanoTime();
                Future<?> open = pool.submit(() -> d.open(tp));
                assertThatThrownBy(() -> open.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(ConnectException.class)
                        .hasMessageContaining("57014")
                        .hasMessageContaining("the task gives up after 1500 ms")
                        .hasMessageContaining("max.poll.interval.ms");
                assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(10_000L);
            }
            locker.rollback();
            // Nothing is refused at the database: the next owner claims normally once the lock is gone.
            try (SinkDriver d = withOpenBudget(p, 1_500).open(tp)) {
                assertThat(ExactlyOnceJdbcSinkTaskTest.epoch(p.get("name"), tp.topic(), 0)).isGreaterThanOrEqualTo(2);
            }
        } finally {
            pool.shutdownNow();
        }

        Map<String, String> down = ExactlyOnceJdbcSinkTaskTest.props(ExactlyOnceJdbcSinkTaskTest.unique("open_down_sink"));
        down.put(ExactlyOnceJdbcSinkConfig.CONNECTION_URL, "jdbc:postgresql://127.0.0.1:" + TargetDatabase.freePort() + "/postgres");
        down.put(ExactlyOnceJdbcSinkConfig.MAX_RETRIES, "100000");
        down.put(ExactlyOnceJdbcSinkConfig.RETRY_BACKOFF_MS, "100");
        try (SinkDriver d = withOpenBudget(down, 1_000)) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> d.open(tp)).isInstanceOf(ConnectException.class)
                    .hasMessageContaining("the task gives up after 1000 ms");
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(10_000L);
        }
    }

    @Test
    void aLongOutageFailsTheTaskOnlyAfterTheConfiguredRetriesAndLosesNothing() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("outage");
        createEventTable(topic);
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(ExactlyOnceJdbcSinkTaskTest.unique("outage_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.BATCH_SIZE, "5");
        p.put(ExactlyOnceJdbcSinkConfig.MAX_RETRIES, "3");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(events(topic, 0, 0, 5));
            db.stop();
            try {
                java.util.List<org.apache.kafka.connect.sink.SinkRecord> batch = events(topic, 0, 5, 10);
                for (int attempt = 1; attempt <= 3; attempt++) {
                    assertThatThrownBy(() -> d.task.put(batch)).as("attempt %d", attempt).isInstanceOf(RetriableException.class);
                    assertThat(d.context.timeoutMs).isEqualTo(50L);
                }
                assertThatThrownBy(() -> d.task.put(batch)).isInstanceOf(ConnectException.class)
                        .isNotInstanceOf(RetriableException.class)
                        .hasMessageContaining("stayed unavailable through 3 retries")
                        .hasMessageContaining("nothing was lost");
                assertThat(d.commit()).containsEntry(tp, 5L);
            } finally {
                db.restart();
            }
        }
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            assertThat(d.context.offsets).containsEntry(tp, 5L);
            d.deliver(events(topic, 0, 5, 10));
            d.commit();
        }
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" ORDER BY seq")).containsExactlyElementsOf(range(1, 10));
    }

    @Test
    void offsetCommitsDuringAnOutageUseUpNoRetriesAndTheTaskFailsOnlyAfterTheConfiguredOnes() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("outage_ticks");
        createEventTable(topic);
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(ExactlyOnceJdbcSinkTaskTest.unique("outage_ticks_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.BATCH_SIZE, "5");
        p.put(ExactlyOnceJdbcSinkConfig.MAX_RETRIES, "3");
        p.put(ExactlyOnceJdbcSinkConfig.RETRY_BACKOFF_MS, "200");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(events(topic, 0, 0, 5));
            db.stop();
            try {
                List<org.apache.kafka.connect.sink.SinkRecord> batch = events(topic, 0, 5, 10);
                int retriable = 0;
                ConnectException fatal = null;
                long firstFailure = 0;
                // As a worker does: redeliver after the backoff the task asked for, committing offsets often meanwhile.
                for (int delivery = 0; delivery < 10 && fatal == null; delivery++) {
                    try {
                        d.task.put(batch);
                    } catch (RetriableException e) {
                        firstFailure = retriable++ == 0 ? System.nanoTime() : firstFailure;
                        for (int tick = 0; tick < 10; tick++) {
                            assertThat(d.commit()).as("offset commit during the outage").containsEntry(tp, 5L);
                        }
                        Thread.sleep(d.context.timeoutMs);
                    } catch (ConnectException e) {
                        fatal = e;
                    }
                }
                long failedAfterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - firstFailure);
                assertThat(retriable).as("failed writes before the last, which fails the task").isEqualTo(3);
                assertThat(fatal).isNotNull().isNotInstanceOf(RetriableException.class);
                assertThat(fatal.getMessage()).contains("stayed unavailable through 3 retries").contains("nothing was lost");
                assertThat(failedAfterMs).as("three backoffs of 200 ms").isGreaterThanOrEqualTo(600L);
                assertThat(d.commit()).containsEntry(tp, 5L);
            } finally {
                db.restart();
            }
        }
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            assertThat(d.context.offsets).containsEntry(tp, 5L);
            d.deliver(events(topic, 0, 5, 10));
            assertThat(d.commit()).containsEntry(tp, 10L);
        }
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" ORDER BY seq")).containsExactlyElementsOf(range(1, 10));
    }

    @Test
    void aBackendKilledInsideTheTransactionIsRetriedOnANewConnection() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("terminated");
        createEventTable(topic);
        String name = ExactlyOnceJdbcSinkTaskTest.unique("terminated_sink");
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(name);
        TopicPartition tp = new TopicPartition(topic, 0);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (SinkDriver d = new SinkDriver(p, null).open(tp); Connection locker = db.connect()) {
            d.deliver(events(topic, 0, 0, 3));
            d.commit();
            d.deliver(events(topic, 0, 3, 9));
            locker.setAutoCommit(false);
            try (Statement s = locker.createStatement()) {
                s.execute("LOCK TABLE \"" + topic + "\" IN ACCESS EXCLUSIVE MODE");
            }
            Future<Map<TopicPartition, Long>> flush = pool.submit(d::commit);
            String blocked = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'asof-connect sink " + name + "' AND wait_event_type = 'Lock'";
            await().atMost(30, TimeUnit.SECONDS).until(() -> db.scalar(blocked) == 1);
            db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'asof-connect sink " + name + "'");
            assertThat(flush.get(30, TimeUnit.SECONDS)).as("the failed flush reports only what committed").containsEntry(tp, 3L);
            locker.commit();
            d.deliver(events(topic, 0, 3, 9));
            assertThat(d.commit()).containsEntry(tp, 9L);
        } finally {
            pool.shutdownNow();
        }
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" ORDER BY seq")).containsExactlyElementsOf(range(1, 9));
    }

    @Test
    void aCommitWhoseReplyIsLostIsResolvedFromTheOffsetsRowNotReplayed() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("ambiguous");
        List<String> sent = loseTheOutcomeOfACommit(topic, CommitDroppingProxy::cutAfterNextCommit, true);
        assertTheOffsetsRowWasReadBeforeAnyWrite(topic, sent);
    }

    @Test
    void aCommitThatNeverReachedTheServerIsResolvedFromTheOffsetsRowAndWrittenOnce() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("ambiguous_lost");
        List<String> sent = loseTheOutcomeOfACommit(topic, CommitDroppingProxy::dropNextCommit, false);
        assertTheOffsetsRowWasReadBeforeAnyWrite(topic, sent);
    }

    /**
     * Commits 0..3, then loses the outcome of the commit of 4..9 as {@code cut} says, redelivers 4..9 as Connect
     * does after the failure, then writes 10..11: every record lands once. Returns what the sink sent after the cut.
     */
    private static List<String> loseTheOutcomeOfACommit(String topic, java.util.function.Consumer<CommitDroppingProxy> cut,
            boolean committed) throws Exception {
        createEventTable(topic);
        String name = ExactlyOnceJdbcSinkTaskTest.unique(topic + "_sink");
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(name);
        TopicPartition tp = new TopicPartition(topic, 0);
        List<String> sent;
        try (CommitDroppingProxy proxy = new CommitDroppingProxy(db.port())) {
            p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_URL, "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/postgres?prepareThreshold=0");
            try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
                d.deliver(events(topic, 0, 0, 4));
                d.commit();
                d.deliver(events(topic, 0, 4, 10));
                cut.accept(proxy);
                assertThat(d.commit()).as("the outcome is unknown, so nothing new is reported").containsEntry(tp, 4L);
                assertThat(proxy.fired).isTrue();
                assertThat(ExactlyOnceJdbcSinkTaskTest.nextOffset(name, topic, 0)).as("the offsets row says whether it committed")
                        .isEqualTo(committed ? 10L : 4L);
                assertThat(db.column("SELECT seq FROM \"" + topic + "\" ORDER BY seq")).as("the rows agree with the offsets row")
                        .containsExactlyElementsOf(range(1, committed ? 10 : 4));
                // Connect redelivers after the failure; the task must learn from the offsets row, neither replaying nor dropping.
                d.deliver(events(topic, 0, 4, 10));
                assertThat(d.commit()).containsEntry(tp, 10L);
                d.deliver(events(topic, 0, 10, 12));
                assertThat(d.commit()).containsEntry(tp, 12L);
            }
            sent = List.copyOf(proxy.sentAfterCut);
        }
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" ORDER BY seq")).containsExactlyElementsOf(range(1, 12));
        assertThat(ExactlyOnceJdbcSinkTaskTest.nextOffset(name, topic, 0)).isEqualTo(12L);
        return sent;
    }

    /** On the new connection after the cut, the sink read its offsets row before it inserted anything. */
    private static void assertTheOffsetsRowWasReadBeforeAnyWrite(String table, List<String> sent) {
        List<Integer> reads = positionsOf(sent, "SELECT \"epoch\", \"next_offset\" FROM");
        List<Integer> inserts = positionsOf(sent, "INSERT INTO \"public\".\"" + table + "\"");
        assertThat(reads).as("the outcome was learnt from the offsets row").isNotEmpty();
        assertThat(inserts).as("the sink wrote after the cut").isNotEmpty();
        assertThat(reads.get(0)).as("the offsets row was read before anything was written again").isLessThan(inserts.get(0));
    }

    private static List<Integer> positionsOf(List<String> sent, String text) {
        List<Integer> out = new java.util.ArrayList<>();
        for (int i = 0; i < sent.size(); i++) {
            if (sent.get(i).contains(text)) {
                out.add(i);
            }
        }
        return out;
    }
}
