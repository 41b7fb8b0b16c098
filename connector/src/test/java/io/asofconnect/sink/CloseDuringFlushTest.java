package io.asofconnect.sink;

import io.asofconnect.writer.testing.TargetDatabase;

import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.sql.Connection;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.createEventTable;
import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.events;
import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.nextOffset;
import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.range;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code close(partitions)} called while a flush is inside its transaction on another thread: from the moment
 * close is called, nothing more is written for the revoked partitions. (Connect calls both on the task thread;
 * the task must not depend on that.)
 */
class CloseDuringFlushTest {
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
    void aFlushInProgressWhenClosingBeginsCommitsNothingForTheRevokedPartitions() throws Exception {
        String topic = ExactlyOnceJdbcSinkTaskTest.unique("close_mid_flush");
        createEventTable(topic);
        String name = ExactlyOnceJdbcSinkTaskTest.unique("close_mid_flush_sink");
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(name);
        TopicPartition revoked = new TopicPartition(topic, 0);
        TopicPartition kept = new TopicPartition(topic, 1);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        Thread closer = null;
        try (SinkDriver d = new SinkDriver(p, null).open(revoked, kept); Connection locker = db.connect()) {
            d.deliver(events(topic, 0, 0, 2));
            d.deliver(events(topic, 1, 0, 2));
            assertThat(d.commit()).containsEntry(revoked, 2L).containsEntry(kept, 2L);
            d.deliver(events(topic, 0, 2, 5));
            d.deliver(events(topic, 1, 2, 5));
            // The next flush waits inside its transaction, after its first insert, until the lock is released.
            locker.setAutoCommit(false);
            try (Statement s = locker.createStatement()) {
                s.execute("LOCK TABLE \"" + topic + "\" IN ACCESS EXCLUSIVE MODE");
            }
            Future<Map<TopicPartition, Long>> flush = pool.submit(d::commit);
            String blocked = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'asof-connect sink " + name + "' AND wait_event_type = 'Lock'";
            await().atMost(30, TimeUnit.SECONDS).until(() -> db.scalar(blocked) == 1);

            closer = new Thread(() -> d.task.close(List.of(revoked)), "closer");
            closer.start();
            Thread closing = closer;
            await("close has begun and waits for the flush holding the task").atMost(30, TimeUnit.SECONDS)
                    .until(() -> waitsForTheTask(closing));
            locker.commit();

            Map<TopicPartition, Long> reported = flush.get(30, TimeUnit.SECONDS);
            closer.join(TimeUnit.SECONDS.toMillis(30));
            assertThat(closer.isAlive()).isFalse();
            assertThat(reported).as("the flush rolled back the revoked partition's rows and wrote the kept one's again")
                    .containsEntry(revoked, 2L).containsEntry(kept, 5L);
            assertThat(d.commit()).doesNotContainKey(revoked).containsEntry(kept, 5L);
        } finally {
            pool.shutdownNow();
            if (closer != null) {
                closer.join(TimeUnit.SECONDS.toMillis(30));
            }
        }
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" WHERE writer = 0 ORDER BY seq")).containsExactly("1", "2");
        assertThat(db.column("SELECT seq FROM \"" + topic + "\" WHERE writer = 1 ORDER BY seq")).containsExactlyElementsOf(range(1, 5));
        assertThat(nextOffset(name, topic, 0)).isEqualTo(2);
        assertThat(nextOffset(name, topic, 1)).isEqualTo(5);
    }

    /** Blocked on the task's monitor, which the flushing thread holds. */
    private static boolean waitsForTheTask(Thread t) {
        ThreadInfo info = ManagementFactory.getThreadMXBean().getThreadInfo(t.getId());
        return info != null && info.getThreadState() == Thread.State.BLOCKED
                && info.getLockName() != null && info.getLockName().startsWith(ExactlyOnceJdbcSinkTask.class.getName() + "@");
    }
}
