package io.asofconnect.sink;

import io.asofconnect.writer.testing.TargetDatabase;

import io.asofconnect.sink.config.ExactlyOnceJdbcSinkConfig;
import io.asofconnect.writer.FencedException;
import io.asofconnect.writer.OffsetStore;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The task against a real Postgres, driven as a worker drives it. Each test uses its own connector name and table. */
class ExactlyOnceJdbcSinkTaskTest {
    private static final AtomicInteger NAMES = new AtomicInteger();
    static final Schema EVENT = SchemaBuilder.struct().name("event")
            .field("writer", Schema.INT32_SCHEMA)
            .field("seq", Schema.INT32_SCHEMA)
            .field("payload", Schema.OPTIONAL_STRING_SCHEMA)
            .build();

    static TargetDatabase db;

    @BeforeAll
    static void startDatabase() throws Exception {
        db = TargetDatabase.start();
    }

    @AfterAll
    static void stopDatabase() throws Exception {
        db.close();
    }

    static String unique(String prefix) {
        return prefix + "_" + NAMES.incrementAndGet();
    }

    static Map<String, String> props(String name) {
        Map<String, String> p = new HashMap<>();
        p.put("name", name);
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_URL, db.url());
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_USER, "postgres");
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_PASSWORD, "postgres");
        p.put(ExactlyOnceJdbcSinkConfig.BATCH_SIZE, "1000");
        p.put(ExactlyOnceJdbcSinkConfig.RETRY_BACKOFF_MS, "50");
        // Flushes only at batch.size and preCommit, never by the clock, unless a test asks for a linger.
        p.put(ExactlyOnceJdbcSinkConfig.BATCH_LINGER_MS, "3600000");
        return p;
    }

    static void createEventTable(String table) throws Exception {
        db.execute("CREATE TABLE \"" + table + "\" (writer int NOT NULL, seq int NOT NULL CHECK (seq > 0), payload text, UNIQUE (writer, seq))");
    }

    static SinkRecord event(String topic, int partition, long offset, int writer, int seq) {
        Struct v = new Struct(EVENT).put("writer", writer).put("seq", seq).put("payload", "p" + seq);
        return new SinkRecord(topic, partition, null, null, EVENT, v, offset);
    }

    /** Events offset from..to-1 of one partition, writer = partition, seq = offset + 1. */
    static List<SinkRecord> events(String topic, int partition, long from, long to) {
        List<SinkRecord> out = new ArrayList<>();
        for (long o = from; o < to; o++) {
            out.add(event(topic, partition, o, partition, (int) o + 1));
        }
        return out;
    }

    static long nextOffset(String name, String topic, int partition) throws Exception {
        List<String> v = db.column("SELECT next_offset FROM asof_connect_offsets WHERE connector_name = '" + name
                + "' AND topic = '" + topic + "' AND kafka_partition = " + partition);
        return v.isEmpty() ? Long.MIN_VALUE : Long.parseLong(v.get(0));
    }

    static long epoch(String name, String topic, int partition) throws Exception {
        List<String> v = db.column("SELECT epoch FROM asof_connect_offsets WHERE connector_name = '" + name
                + "' AND topic = '" + topic + "' AND kafka_partition = " + partition);
        return v.isEmpty() ? Long.MIN_VALUE : Long.parseLong(v.get(0));
    }

    @Test
    void severalWritersLandExactlyOnceAndTheOffsetsRowsFollowTheLastRecord() throws Exception {
        String topic = unique("green");
        createEventTable(topic);
        Map<String, String> p = props(unique("green_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.BATCH_SIZE, "7");
        TopicPartition[] tps = {new TopicPartition(topic, 0), new TopicPartition(topic, 1), new TopicPartition(topic, 2)};
        try (SinkDriver d = new SinkDriver(p, null).open(tps)) {
            int n = 40;
            for (int chunk = 0; chunk < n; chunk += 5) {
                List<SinkRecord> batch = new ArrayList<>();
                for (int w = 0; w < 3; w++) {
                    batch.addAll(events(topic, w, chunk, chunk + 5));
                }
                d.deliver(batch);
                if (chunk % 15 == 0) {
                    d.commit();
                }
            }
            Map<TopicPartition, Long> committed = d.commit();
            for (int w = 0; w < 3; w++) {
                assertThat(db.column("SELECT seq FROM \"" + topic + "\" WHERE writer = " + w + " ORDER BY seq"))
                        .containsExactlyElementsOf(range(1, n));
                assertThat(nextOffset(p.get("name"), topic, w)).isEqualTo(n);
                assertThat(committed).containsEntry(tps[w], (long) n);
            }
        }
    }

    @Test
    void openRewindsToTheTargetsOffsetsAndSkipsRedeliveredRecords() throws Exception {
        String topic = unique("rewind");
        createEventTable(topic);
        Map<String, String> p = props(unique("rewind_sink"));
        TopicPartition tp0 = new TopicPartition(topic, 0);
        TopicPartition tp1 = new TopicPartition(topic, 1);
        try (SinkDriver d = new SinkDriver(p, null).open(tp0, tp1)) {
            assertThat(d.context.offsets).as("a partition the target has never seen keeps the group's position").isEmpty();
            d.deliver(events(topic, 0, 0, 10));
            d.deliver(events(topic, 1, 0, 4));
            d.commit();
        }
        try (SinkDriver d = new SinkDriver(p, null).open(tp0, tp1)) {
            // Whatever the consumer group holds (ahead or behind), the task seeks to the target's offsets.
            assertThat(d.context.offsets).containsEntry(tp0, 10L).containsEntry(tp1, 4L);
            // Consumer behind: records 5..9 come again and must be skipped.
            d.deliver(events(topic, 0, 5, 15));
            // After a seek back from a consumer that was ahead, the records arrive from the target's offset.
            d.deliver(events(topic, 1, 4, 8));
            d.commit();
        }
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" WHERE writer = 0 ORDER BY seq")).containsExactlyElementsOf(range(1, 15));
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" WHERE writer = 1 ORDER BY seq")).containsExactlyElementsOf(range(1, 8));
        assertThat(nextOffset(p.get("name"), topic, 0)).isEqualTo(15);
        assertThat(nextOffset(p.get("name"), topic, 1)).isEqualTo(8);
    }

    @Test
    void offsetsAlteredThroughTheConnectorMoveTheTargetsOffsetsAndFenceTheOldEpoch() throws Exception {
        String topic = unique("alter");
        createEventTable(topic);
        Map<String, String> p = props(unique("alter_sink"));
        TopicPartition tp0 = new TopicPartition(topic, 0);
        TopicPartition tp1 = new TopicPartition(topic, 1);
        try (SinkDriver d = new SinkDriver(p, null).open(tp0, tp1)) {
            d.deliver(events(topic, 0, 0, 3));
            d.deliver(events(topic, 1, 0, 3));
            d.commit();
            Map<TopicPartition, Long> altered = new HashMap<>();
            altered.put(tp0, 10L);
            altered.put(tp1, null);
            ExactlyOnceJdbcSinkConnector connector = new ExactlyOnceJdbcSinkConnector();
            assertThat(connector.alterOffsets(p, altered)).isTrue();
            d.deliver(events(topic, 0, 3, 4));
            assertThat(d.commit()).as("a task still running cannot commit").containsEntry(tp0, 3L);
            assertThatThrownBy(() -> d.task.put(List.of())).isInstanceOf(FencedException.class);
        }
        assertThat(nextOffset(p.get("name"), topic, 0)).isEqualTo(10);
        assertThat(nextOffset(p.get("name"), topic, 1)).as("reset: the row stays, with no offset").isEqualTo(OffsetStore.NO_OFFSET);
        assertThat(epoch(p.get("name"), topic, 0)).as("the change raised the epoch of the task's claim").isEqualTo(2);
        assertThat(epoch(p.get("name"), topic, 1)).as("the reset raised the epoch of the task's claim").isEqualTo(2);
        try (SinkDriver d = new SinkDriver(p, null).open(tp0, tp1)) {
            assertThat(d.context.offsets).containsOnly(Map.entry(tp0, 10L));
        }
        assertThat(epoch(p.get("name"), topic, 1)).as("epochs only rise").isEqualTo(3);
    }

    @Test
    void aZombieOfTheGenerationBeforeAnOffsetsResetCannotCommitAfterANewOwnerClaims() throws Exception {
        String topic = unique("reset_zombie");
        createEventTable(topic);
        Map<String, String> p = props(unique("reset_zombie_sink"));
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<TopicPartition, Long> reset = new HashMap<>();
        reset.put(tp, null);
        try (SinkDriver zombie = new SinkDriver(p, null).open(tp)) {
            zombie.deliver(events(topic, 0, 0, 2));
            assertThat(zombie.commit()).containsEntry(tp, 2L);
            assertThat(new ExactlyOnceJdbcSinkConnector().alterOffsets(p, reset)).isTrue();
            try (SinkDriver owner = new SinkDriver(p, null).open(tp)) {
                assertThat(owner.context.offsets).as("after a reset the consumer group's position counts").isEmpty();
                List<SinkRecord> mine = new ArrayList<>();
                for (long o = 0; o < 3; o++) {
                    mine.add(event(topic, 0, o, 9, (int) o + 10));
                }
                owner.deliver(mine);
                assertThat(owner.commit()).containsEntry(tp, 3L);
            }
            zombie.deliver(events(topic, 0, 2, 5));
            assertThat(zombie.commit()).as("the zombie reports only what it committed itself").containsEntry(tp, 2L);
            assertThatThrownBy(() -> zombie.task.put(List.of())).isInstanceOf(FencedException.class)
                    .hasMessageContaining("this task held epoch 1");
        }
        assertThat(db.column("SELECT writer || ':' || seq FROM \"" + topic + "\" ORDER BY writer, seq"))
                .containsExactly("0:1", "0:2", "9:10", "9:11", "9:12");
        assertThat(nextOffset(p.get("name"), topic, 0)).isEqualTo(3);
        assertThat(epoch(p.get("name"), topic, 0)).isEqualTo(3);
    }

    @Test
    void aBatchThatDoesNotFillIsWrittenOnceItHasLingeredWithoutWaitingForTheOffsetCommit() throws Exception {
        String topic = unique("linger");
        createEventTable(topic);
        Map<String, String> p = props(unique("linger_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.BATCH_LINGER_MS, "400");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(events(topic, 0, 0, 5));
            long askedMs = d.context.timeoutMs;
            // However long the put and this query take: the linger starts at the put that buffered the records, and
            // the task writes only inside put and preCommit, so no later put has seen the batch grow old yet.
            assertThat(db.column("SELECT seq FROM \"" + topic + "\"")).as("a young batch still forms").isEmpty();
            assertThat(askedMs).as("the task asks for a put by the end of the linger").isBetween(1L, 400L);
            Thread.sleep(askedMs + 50);
            d.deliver(List.of()); // what Connect delivers when that poll brought nothing
            assertThat(db.column("SELECT seq FROM \"" + topic + "\" ORDER BY seq")).containsExactlyElementsOf(range(1, 5));
            assertThat(nextOffset(p.get("name"), topic, 0)).isEqualTo(5);
        }
        p.put(ExactlyOnceJdbcSinkConfig.BATCH_LINGER_MS, "0");
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(events(topic, 0, 5, 8));
            assertThat(nextOffset(p.get("name"), topic, 0)).as("linger 0 writes what each put delivered").isEqualTo(8);
        }
    }

    @Test
    void preCommitNeverReportsMoreThanTheTargetCommitted() throws Exception {
        String topic = unique("precommit");
        createEventTable(topic);
        Map<String, String> p = props(unique("precommit_sink"));
        TopicPartition tp = new TopicPartition(topic, 0);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (SinkDriver d = new SinkDriver(p, null).open(tp); Connection locker = db.connect()) {
            d.deliver(events(topic, 0, 0, 3));
            assertThat(d.commit()).containsEntry(tp, 3L);
            d.deliver(events(topic, 0, 3, 8));
            locker.setAutoCommit(false);
            try (Statement s = locker.createStatement()) {
                s.execute("LOCK TABLE \"" + topic + "\" IN ACCESS EXCLUSIVE MODE");
            }
            Future<Map<TopicPartition, Long>> blocked = pool.submit(d::commit);
            assertThatThrownBy(() -> blocked.get(1, TimeUnit.SECONDS)).isInstanceOf(TimeoutException.class);
            assertThat(nextOffset(p.get("name"), topic, 0)).as("nothing committed while the table is locked").isEqualTo(3);
            locker.commit();
            Map<TopicPartition, Long> reported = blocked.get(30, TimeUnit.SECONDS);
            assertThat(reported).containsEntry(tp, nextOffset(p.get("name"), topic, 0)).containsEntry(tp, 8L);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aFlushThatCannotCommitReportsTheOldOffsetsAndRetriesLater() throws Exception {
        String topic = unique("locktimeout");
        createEventTable(topic);
        Map<String, String> p = props(unique("locktimeout_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_URL, db.url() + "?options=-c%20lock_timeout%3D300");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(p, null).open(tp); Connection locker = db.connect()) {
            d.deliver(events(topic, 0, 0, 2));
            d.commit();
            d.deliver(events(topic, 0, 2, 6));
            locker.setAutoCommit(false);
            try (Statement s = locker.createStatement()) {
                s.execute("LOCK TABLE \"" + topic + "\" IN ACCESS EXCLUSIVE MODE");
            }
            assertThat(d.commit()).containsEntry(tp, 2L);
            assertThat(nextOffset(p.get("name"), topic, 0)).isEqualTo(2);
            locker.commit();
            d.deliver(List.of());
            assertThat(d.commit()).containsEntry(tp, 6L);
            assertThat(db.column("SELECT seq FROM \"" + topic + "\" ORDER BY seq")).containsExactlyElementsOf(range(1, 6));
        }
    }

    @Test
    void closedPartitionsWriteNothingMore() throws Exception {
        String topic = unique("close");
        createEventTable(topic);
        Map<String, String> p = props(unique("close_sink"));
        TopicPartition tp0 = new TopicPartition(topic, 0);
        TopicPartition tp1 = new TopicPartition(topic, 1);
        try (SinkDriver d = new SinkDriver(p, null).open(tp0, tp1)) {
            d.deliver(events(topic, 0, 0, 2));
            d.commit();
            d.deliver(events(topic, 0, 2, 5));
            d.deliver(events(topic, 1, 0, 5));
            d.task.close(List.of(tp0));
            Map<TopicPartition, Long> reported = d.commit();
            assertThat(reported).doesNotContainKey(tp0).containsEntry(tp1, 5L);
            d.deliver(events(topic, 0, 5, 6));
            d.commit();
        }
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" WHERE writer = 0 ORDER BY seq")).containsExactly("1", "2");
        assertThat(nextOffset(p.get("name"), topic, 0)).isEqualTo(2);
        assertThat(nextOffset(p.get("name"), topic, 1)).isEqualTo(5);
    }

    @Test
    void aZombieTaskIsFencedAndTheNewOwnersRowsStand() throws Exception {
        String topic = unique("zombie");
        createEventTable(topic);
        Map<String, String> p = props(unique("zombie_sink"));
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver zombie = new SinkDriver(p, null).open(tp)) {
            zombie.deliver(events(topic, 0, 0, 2));
            zombie.commit();
            zombie.deliver(events(topic, 0, 2, 6));
            try (SinkDriver owner = new SinkDriver(p, null).open(tp)) {
                assertThat(owner.context.offsets).containsEntry(tp, 2L);
                List<SinkRecord> mine = new ArrayList<>();
                for (long o = 2; o < 6; o++) {
                    mine.add(event(topic, 0, o, 9, (int) o + 1));
                }
                owner.deliver(mine);
                assertThat(owner.commit()).containsEntry(tp, 6L);
            }
            assertThat(zombie.commit()).as("the zombie reports only what it committed itself").containsEntry(tp, 2L);
            assertThatThrownBy(() -> zombie.task.put(events(topic, 0, 6, 7)))
                    .isInstanceOf(FencedException.class)
                    .hasMessageContaining("partition " + tp + " was taken over by another task (epoch 2")
                    .hasMessageContaining("this task stops; nothing was written");
        }
        assertThat(db.column("SELECT writer || ':' || seq FROM \"" + topic + "\" ORDER BY seq"))
                .containsExactly("0:1", "0:2", "9:3", "9:4", "9:5", "9:6");
        assertThat(nextOffset(p.get("name"), topic, 0)).isEqualTo(6);
    }

    @Test
    void aTaskFrozenInsideItsTransactionIsFencedWhenItWakesAndTheNewOwnerNeverWaits() throws Exception {
        String topic = unique("frozen");
        createEventTable(topic);
        Map<String, String> p = props(unique("frozen_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.BATCH_SIZE, "3");
        TopicPartition tp = new TopicPartition(topic, 0);
        java.util.concurrent.CountDownLatch inside = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch thaw = new java.util.concurrent.CountDownLatch(1);
        // The reporter runs inside the flush's transaction: blocking it freezes the task there, as SIGSTOP would.
        ErrantRecordReporter freezing = (record, error) -> {
            inside.countDown();
            try {
                thaw.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return CompletableFuture.completedFuture(null);
        };
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try (SinkDriver zombie = new SinkDriver(p, freezing).open(tp)) {
            List<SinkRecord> batch = List.of(event(topic, 0, 0, 0, 1), event(topic, 0, 1, 0, -2), event(topic, 0, 2, 0, 3));
            Future<?> frozen = pool.submit(() -> zombie.deliver(batch));
            assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();
            Future<SinkDriver> takeover = pool.submit(() -> new SinkDriver(p, null).open(tp));
            try (SinkDriver owner = takeover.get(10, TimeUnit.SECONDS)) {
                assertThat(owner.context.offsets).as("nothing was committed before the takeover").isEmpty();
                List<SinkRecord> mine = new ArrayList<>();
                for (long o = 0; o < 4; o++) {
                    mine.add(event(topic, 0, o, 9, (int) o + 1));
                }
                owner.deliver(mine);
                assertThat(owner.commit()).containsEntry(tp, 4L);
                thaw.countDown();
                assertThatThrownBy(() -> frozen.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(FencedException.class)
                        .hasMessageContaining("was taken over by another task");
            }
            assertThat(zombie.commit()).as("the zombie never committed anything").isEmpty();
        } finally {
            thaw.countDown();
            pool.shutdownNow();
        }
        assertThat(db.column("SELECT writer || ':' || seq FROM \"" + topic + "\" ORDER BY seq")).containsExactly("9:1", "9:2", "9:3", "9:4");
        assertThat(nextOffset(p.get("name"), topic, 0)).isEqualTo(4);
    }

    @Test
    void anUnwritableOffsetsTableFailsWithAnActionableMessageUntilGranted() throws Exception {
        String topic = unique("grants");
        String role = unique("sinkrole");
        String password = "pw-" + role + "-secret";
        String offsetsTable = unique("guarded_offsets");
        createEventTable(topic);
        db.execute("CREATE ROLE " + role + " LOGIN PASSWORD '" + password + "'",
                "GRANT USAGE ON SCHEMA public TO " + role,
                "GRANT SELECT, INSERT, UPDATE ON \"" + topic + "\" TO " + role,
                "CREATE TABLE " + offsetsTable + " (LIKE asof_connect_offsets INCLUDING ALL)");
        Map<String, String> p = props(unique("grants_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_USER, role);
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_PASSWORD, password);
        p.put(ExactlyOnceJdbcSinkConfig.OFFSETS_TABLE_NAME, offsetsTable);
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(p, null)) {
            assertThatThrownBy(() -> d.open(tp))
                    .isInstanceOf(ConnectException.class)
                    .hasMessageContaining("42501")
                    .hasMessageContaining("grant the user " + role + " SELECT, INSERT, UPDATE on the offsets table public." + offsetsTable)
                    .hasMessageContaining("GRANT SELECT, INSERT, UPDATE ON \"public\".\"" + offsetsTable + "\" TO \"" + role + "\"")
                    .hasMessageNotContaining(password);
        }
        db.execute("GRANT SELECT, INSERT, UPDATE ON " + offsetsTable + " TO " + role);
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(events(topic, 0, 0, 3));
            assertThat(d.commit()).containsEntry(tp, 3L);
        }
        assertThat(db.scalar("SELECT count(*) FROM \"" + topic + "\"")).isEqualTo(3);
    }

    @Test
    void wrongCredentialsNeverShowThePasswordInMessagesOrLogs() throws Exception {
        Map<String, String> p = props(unique("badpw_sink"));
        String password = "not-the-password-" + NAMES.incrementAndGet();
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_PASSWORD, password);
        p.put(ExactlyOnceJdbcSinkConfig.MAX_RETRIES, "0");
        db.execute("CREATE ROLE badpw_user LOGIN PASSWORD 'right-one'");
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_USER, "badpw_user");
        java.io.PrintStream originalErr = System.err;
        java.io.ByteArrayOutputStream logs = new java.io.ByteArrayOutputStream();
        // slf4j-simple writes to whatever System.err is at the time of each log call.
        System.setErr(new java.io.PrintStream(logs, true, java.nio.charset.StandardCharsets.UTF_8));
        try (SinkDriver d = new SinkDriver(p, null)) {
            assertThat(new ExactlyOnceJdbcSinkConfig(p).toString()).doesNotContain(password);
            assertThatThrownBy(() -> d.open(new TopicPartition("t", 0)))
                    .isInstanceOf(ConnectException.class)
                    .hasMessageContaining("SQLState 28P01")
                    .hasMessageContaining("check connection.user and connection.password")
                    .satisfies(e -> {
                        for (Throwable t = e; t != null; t = t.getCause()) {
                            assertThat(String.valueOf(t.getMessage())).doesNotContain(password);
                        }
                    });
        } finally {
            System.setErr(originalErr);
        }
        assertThat(logs.toString(java.nio.charset.StandardCharsets.UTF_8)).contains("stops: taking over partitions").doesNotContain(password);
    }

    /** Collects reported records; at each report, checks the target's offset has not yet moved past the record. */
    static final class CollectingReporter implements ErrantRecordReporter {
        final List<SinkRecord> records = new ArrayList<>();
        final List<Throwable> errors = new ArrayList<>();
        final List<Long> nextOffsetAtReport = new ArrayList<>();
        private final String connector;

        CollectingReporter(String connector) {
            this.connector = connector;
        }

        @Override
        public Future<Void> report(SinkRecord record, Throwable error) {
            try {
                nextOffsetAtReport.add(nextOffset(connector, record.topic(), record.kafkaPartition()));
            } catch (Exception e) {
                throw new AssertionError(e);
            }
            records.add(record);
            errors.add(error);
            return CompletableFuture.completedFuture(null);
        }
    }

    static List<SinkRecord> mixedBatch(String topic) {
        List<SinkRecord> batch = new ArrayList<>();
        batch.add(map(topic, 0, 1, "10"));
        batch.add(map(topic, 1, -1, "11"));          // CHECK (seq > 0) violated: 23514
        batch.add(map(topic, 2, 3, "12"));
        batch.add(map(topic, 3, 4, "secret-abc"));   // not an integer: 22P02, the value must not leak
        batch.add(map(topic, 4, 5, "14"));
        return batch;
    }

    /** The table {@link #mixedBatch} writes to: its CHECK and its integer column reject the two bad records. */
    static void createMixedBatchTable(String table) throws Exception {
        db.execute("CREATE TABLE \"" + table + "\" (writer int, seq int CHECK (seq > 0), amount int)");
    }

    static SinkRecord map(String topic, long offset, int seq, String amount) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("writer", 1);
        v.put("seq", seq);
        v.put("amount", amount);
        return new SinkRecord(topic, 0, null, null, null, v, offset);
    }

    @Test
    void badRecordsGoToTheReporterBeforeTheOffsetPassesThemAndTheGoodOnesLandOnce() throws Exception {
        String topic = unique("errant");
        createMixedBatchTable(topic);
        Map<String, String> p = props(unique("errant_sink"));
        CollectingReporter reporter = new CollectingReporter(p.get("name"));
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(p, reporter).open(tp)) {
            d.deliver(mixedBatch(topic));
            assertThat(d.commit()).containsEntry(tp, 5L);
        }
        assertThat(reporter.records).extracting(SinkRecord::kafkaOffset).containsExactly(1L, 3L);
        assertThat(reporter.nextOffsetAtReport).allMatch(o -> o <= 1L);
        assertThat(reporter.errors).allSatisfy(e -> assertThat(e.getMessage()).contains("SQLState 2").doesNotContain("secret-abc"));
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" ORDER BY seq")).containsExactly("1", "3", "5");
        assertThat(nextOffset(p.get("name"), topic, 0)).isEqualTo(5);
    }

    @Test
    void metricsCountTheRowsTransactionsDeadLettersAndRewindsThatHappened() throws Exception {
        String topic = unique("metered");
        createMixedBatchTable(topic);
        Map<String, String> p = props(unique("metered_sink"));
        CollectingReporter reporter = new CollectingReporter(p.get("name"));
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(p, reporter).open(tp)) {
            assertThat(d.context.metric("sink-rewinds-total")).as("a partition the target has never seen").isZero();
            d.deliver(mixedBatch(topic));
            d.commit();
            assertThat(d.context.metric("sink-rows-written-total")).isEqualTo(3);
            assertThat(d.context.metric("sink-dead-letter-records-total")).isEqualTo(2);
            assertThat(d.context.metric("sink-transactions-total")).isEqualTo(1);
            assertThat(d.context.metric("sink-batch-size-max")).isEqualTo(5);
            assertThat(d.context.metric("sink-transaction-time-ms-max")).isPositive();
            assertThat(d.context.metric("sink-buffered-records")).isZero();
            assertThat(d.context.metric("sink-fenced-commits-total")).isZero();
        }
        try (SinkDriver d = new SinkDriver(p, reporter).open(tp)) {
            assertThat(d.context.metric("sink-rewinds-total")).isEqualTo(1);
            try (SinkDriver takeover = new SinkDriver(p, reporter).open(tp)) {
                d.deliver(List.of(map(topic, 5, 6, "15"), map(topic, 6, 7, "16")));
                d.commit();
                assertThatThrownBy(() -> d.task.put(List.of())).isInstanceOf(FencedException.class);
                assertThat(d.context.metric("sink-fenced-commits-total")).isEqualTo(1);
                assertThat(d.context.metric("sink-rows-written-total")).as("a fenced flush writes nothing").isZero();
                assertThat(takeover.context.metric("sink-rewinds-total")).isEqualTo(1);
            }
        }
    }

    @Test
    void withoutAReporterABadRecordStopsTheTaskAndTheOffsetStaysBeforeIt() throws Exception {
        String topic = unique("errant_none");
        createMixedBatchTable(topic);
        Map<String, String> p = props(unique("errant_none_sink"));
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(List.of(map(topic, 0, 1, "1")));
            assertThat(d.commit()).containsEntry(tp, 1L);
            List<SinkRecord> bad = new ArrayList<>(mixedBatch(topic).subList(2, 5));
            d.deliver(bad);
            assertThat(d.commit()).containsEntry(tp, 1L);
            assertThatThrownBy(() -> d.task.put(List.of()))
                    .isInstanceOf(ConnectException.class)
                    .hasMessageContaining("the record at " + topic + "-0@3 cannot be written")
                    .hasMessageContaining("SQLState 22P02")
                    .hasMessageContaining("errors.tolerance=all")
                    .hasMessageNotContaining("secret-abc");
        }
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" ORDER BY seq")).containsExactly("1");
        assertThat(nextOffset(p.get("name"), topic, 0)).isEqualTo(1);
    }

    @Test
    void hostileNamesAreOnlyEverIdentifiers() throws Exception {
        db.execute("CREATE TABLE canary (x int)", "INSERT INTO canary VALUES (1)");
        String topic = "we\"ird; DROP TABLE canary; -- tâble ü";
        Schema schema = SchemaBuilder.struct()
                .field("id", Schema.INT64_SCHEMA)
                .field("co\"l", Schema.STRING_SCHEMA)
                .field("semi;colon", Schema.STRING_SCHEMA)
                .field("dash--dash", Schema.STRING_SCHEMA)
                .field("spa ce", Schema.STRING_SCHEMA)
                .field("ünï", Schema.STRING_SCHEMA)
                .build();
        Map<String, String> p = props(unique("hostile_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.SCHEMA_EVOLUTION, "BASIC");
        TopicPartition tp = new TopicPartition(topic, 0);
        String evil = "'); DROP TABLE canary; --";
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            Struct v = new Struct(schema).put("id", 1L).put("co\"l", evil).put("semi;colon", "b").put("dash--dash", "c")
                    .put("spa ce", "d").put("ünï", "e");
            d.deliver(List.of(new SinkRecord(topic, 0, null, null, schema, v, 0)));
            assertThat(d.commit()).containsEntry(tp, 1L);
        }
        assertThat(db.scalar("SELECT count(*) FROM canary")).isEqualTo(1);
        assertThat(db.column("SELECT \"co\"\"l\" || '|' || \"semi;colon\" || \"dash--dash\" || \"spa ce\" || \"ünï\" FROM \"we\"\"ird; DROP TABLE canary; -- tâble ü\""))
                .containsExactly(evil + "|bcde");
        assertThat(db.column("SELECT topic FROM asof_connect_offsets WHERE connector_name = '" + p.get("name") + "'")).containsExactly(topic);
    }

    @Test
    void createsTheTableFromTheSchemaUpsertsAndDeletesOnTombstones() throws Exception {
        String topic = unique("upsert");
        Schema keySchema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build();
        Schema nested = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.OPTIONAL_STRING_SCHEMA).optional().build();
        Schema valueSchema = SchemaBuilder.struct()
                .field("id", Schema.INT32_SCHEMA)
                .field("name", Schema.OPTIONAL_STRING_SCHEMA)
                .field("amount", Decimal.builder(2).optional().build())
                .field("day", Date.builder().optional().build())
                .field("at", Timestamp.builder().optional().build())
                .field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
                .field("ok", Schema.OPTIONAL_BOOLEAN_SCHEMA)
                .field("ratio", Schema.OPTIONAL_FLOAT64_SCHEMA)
                .field("small", Schema.OPTIONAL_INT16_SCHEMA)
                .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
                .field("nested", nested)
                .build();
        Map<String, String> p = props(unique("upsert_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.SCHEMA_EVOLUTION, "BASIC");
        p.put(ExactlyOnceJdbcSinkConfig.INSERT_MODE, "UPSERT");
        p.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE, "RECORD_KEY");
        p.put(ExactlyOnceJdbcSinkConfig.DELETE_ENABLED, "true");
        TopicPartition tp = new TopicPartition(topic, 0);
        java.util.Date day = new java.util.Date(19_000L * 86_400_000L);
        java.util.Date at = new java.util.Date(1_700_000_000_123L);
        java.util.function.BiFunction<Integer, String, Struct> row = (id, name) -> new Struct(valueSchema)
                .put("id", id).put("name", name).put("amount", new BigDecimal("12.34")).put("day", day).put("at", at)
                .put("blob", new byte[] {1, 2, 3}).put("ok", true).put("ratio", 0.5).put("small", (short) 7)
                .put("tags", List.of("x", "y\"z")).put("nested", new Struct(nested).put("a", 1).put("b", "q"));
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(List.of(
                    new SinkRecord(topic, 0, keySchema, new Struct(keySchema).put("id", 1), valueSchema, row.apply(1, "one"), 0),
                    new SinkRecord(topic, 0, keySchema, new Struct(keySchema).put("id", 2), valueSchema, row.apply(2, "two"), 1),
                    new SinkRecord(topic, 0, keySchema, new Struct(keySchema).put("id", 1), valueSchema, row.apply(1, "uno"), 2),
                    new SinkRecord(topic, 0, keySchema, new Struct(keySchema).put("id", 2), null, null, 3),
                    new SinkRecord(topic, 0, keySchema, new Struct(keySchema).put("id", 3), null, null, 4)));
            assertThat(d.commit()).containsEntry(tp, 5L);
        }
        assertThat(db.column("SELECT id || ':' || name || ':' || amount || ':' || day || ':' || ok || ':' || ratio || ':' || small"
                + " || ':' || encode(blob, 'hex') || ':' || (at = to_timestamp(1700000000.123)) || ':' || (nested->>'b') || ':' || (tags->>1)"
                + " FROM \"" + topic + "\""))
                .containsExactly("1:uno:12.34:2022-01-08:true:0.5:7:010203:true:q:y\"z");
        assertThat(db.column("SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = '" + topic + "' ORDER BY ordinal_position"))
                .containsExactly("id integer", "name text", "amount numeric", "day date", "at timestamp with time zone", "blob bytea",
                        "ok boolean", "ratio double precision", "small smallint", "tags jsonb", "nested jsonb");
        assertThat(db.column("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
                + " WHERE i.indrelid = '\"" + topic + "\"'::regclass AND i.indisprimary")).containsExactly("id");
    }

    @Test
    void anUpsertBatchTouchingOneKeyTwiceKeepsTheLastChange() throws Exception {
        String topic = unique("upsert_twice");
        db.execute("CREATE TABLE \"" + topic + "\" (writer int, seq int, payload text, PRIMARY KEY (writer, seq))");
        Map<String, String> p = props(unique("upsert_twice_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.INSERT_MODE, "UPSERT");
        p.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE, "RECORD_VALUE");
        p.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS, "writer,seq");
        TopicPartition tp = new TopicPartition(topic, 0);
        List<SinkRecord> batch = new ArrayList<>();
        for (int o = 0; o < 9; o++) {
            Struct v = new Struct(EVENT).put("writer", 0).put("seq", o % 3).put("payload", "v" + o);
            batch.add(new SinkRecord(topic, 0, null, null, EVENT, v, o));
        }
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(batch);
            assertThat(d.commit()).containsEntry(tp, 9L);
        }
        assertThat(db.column("SELECT seq || ':' || payload FROM \"" + topic + "\" ORDER BY seq")).containsExactly("0:v6", "1:v7", "2:v8");
    }

    @Test
    void aTombstoneForATableNotYetCreatedDeletesNothingAndMovesOn() throws Exception {
        String topic = unique("tombstone_first");
        Schema keySchema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build();
        Map<String, String> p = props(unique("tombstone_first_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.SCHEMA_EVOLUTION, "BASIC");
        p.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE, "RECORD_KEY");
        p.put(ExactlyOnceJdbcSinkConfig.DELETE_ENABLED, "true");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(List.of(new SinkRecord(topic, 0, keySchema, new Struct(keySchema).put("id", 1), null, null, 0)));
            assertThat(d.commit()).containsEntry(tp, 1L);
        }
        assertThat(db.scalar("SELECT count(*) FROM pg_tables WHERE tablename = '" + topic + "'")).isZero();
    }

    @Test
    void debeziumTimeTypesLandAsDatesAndTimestamps() throws Exception {
        String topic = unique("dbz_time");
        Schema schema = SchemaBuilder.struct()
                .field("day", SchemaBuilder.int32().name("io.debezium.time.Date").build())
                .field("at_ms", SchemaBuilder.int64().name("io.debezium.time.Timestamp").build())
                .field("at_us", SchemaBuilder.int64().name("io.debezium.time.MicroTimestamp").build())
                .field("zoned", SchemaBuilder.string().name("io.debezium.time.ZonedTimestamp").build())
                .field("doc", SchemaBuilder.string().name("io.debezium.data.Json").build())
                .field("uid", SchemaBuilder.string().name("io.debezium.data.Uuid").build())
                .build();
        Map<String, String> p = props(unique("dbz_time_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.SCHEMA_EVOLUTION, "BASIC");
        TopicPartition tp = new TopicPartition(topic, 0);
        Struct v = new Struct(schema).put("day", 19_000).put("at_ms", 1_700_000_000_123L).put("at_us", 1_700_000_000_123_456L)
                .put("zoned", "2023-11-14T22:13:20.5+01:00").put("doc", "{\"a\": [1, 2]}").put("uid", "6F9619FF-8B86-D011-B42D-00C04FC964FF");
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(List.of(new SinkRecord(topic, 0, null, null, schema, v, 0)));
            d.commit();
        }
        assertThat(db.column("SELECT day || '|' || at_ms || '|' || at_us || '|' || (zoned = '2023-11-14T21:13:20.5Z'::timestamptz)"
                + " || '|' || (doc->'a'->>1) || '|' || uid FROM \"" + topic + "\""))
                .containsExactly("2022-01-08|2023-11-14 22:13:20.123|2023-11-14 22:13:20.123456|true|2|6f9619ff-8b86-d011-b42d-00c04fc964ff");
        assertThat(db.column("SELECT data_type FROM information_schema.columns WHERE table_name = '" + topic + "' ORDER BY ordinal_position"))
                .containsExactly("date", "timestamp without time zone", "timestamp without time zone", "timestamp with time zone", "jsonb", "uuid");
    }

    static List<String> range(int fromInclusive, int toInclusive) {
        List<String> out = new ArrayList<>();
        for (int i = fromInclusive; i <= toInclusive; i++) {
            out.add(Integer.toString(i));
        }
        return out;
    }
}
