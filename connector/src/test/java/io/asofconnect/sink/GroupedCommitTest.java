package io.asofconnect.sink;

import io.asofconnect.sink.config.ExactlyOnceJdbcSinkConfig;
import io.asofconnect.writer.testing.TargetDatabase;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.nextOffset;
import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code changelog.group.header} against a real Postgres: a partition is committed only up to its last record ending a
 * group, so a flush never cuts a group; the records after it are neither written nor committed until their group's
 * end arrives, and then land in one transaction, also after a restart, a re-delivery or a revocation. Each row records
 * the transaction that wrote it.
 */
class GroupedCommitTest {
    private static final String END = ExactlyOnceJdbcSinkConfig.VIEW_GROUP_END_HEADER;
    static TargetDatabase db;

    @BeforeAll
    static void startDatabase() throws Exception {
        db = TargetDatabase.start();
        ExactlyOnceJdbcSinkTaskTest.db = db;
        TombstoneTest.db = db;
    }

    @AfterAll
    static void stopDatabase() throws Exception {
        db.close();
    }

    private static Map<String, String> groupedSink(String name) {
        Map<String, String> p = TombstoneTest.upsertByKey(name, true);
        p.put(ExactlyOnceJdbcSinkConfig.CHANGELOG_GROUP_HEADER, END);
        // Small flushes: a group of three records always meets a flush boundary.
        p.put(ExactlyOnceJdbcSinkConfig.BATCH_SIZE, "2");
        return p;
    }

    private static void createTable(String table) throws Exception {
        db.execute("CREATE TABLE \"" + table + "\" (id int PRIMARY KEY, name text, tx bigint DEFAULT txid_current())");
    }

    /** Record {@code offset} writes row id {@code offset}; {@code ends} marks its group's end. */
    private static SinkRecord rec(String topic, long offset, boolean ends) {
        SinkRecord r = TombstoneTest.row(topic, offset, (int) offset, "r" + offset);
        if (ends) {
            r.headers().addString(END, "true");
        }
        return r;
    }

    /** Records {@code from..to-1}, ending groups at the offsets in {@code ends}. */
    private static List<SinkRecord> recs(String topic, long from, long to, long... ends) {
        List<SinkRecord> out = new ArrayList<>();
        for (long o = from; o < to; o++) {
            boolean end = false;
            for (long e : ends) {
                end |= e == o;
            }
            out.add(rec(topic, o, end));
        }
        return out;
    }

    private static List<String> ids(String table) throws Exception {
        return db.column("SELECT id::text FROM \"" + table + "\" ORDER BY id");
    }

    /** How many transactions wrote the rows with these ids. */
    private static long transactions(String table, int fromId, int toId) throws Exception {
        return db.scalar("SELECT count(DISTINCT tx) FROM \"" + table + "\" WHERE id BETWEEN " + fromId + " AND " + toId);
    }

    @Test
    void aFlushThatWouldCutAGroupLeavesItsRecordsUnwrittenAndUncommittedUntilItsEnd() throws Exception {
        String topic = unique("grp_cut");
        createTable(topic);
        String name = unique("grp_cut_sink");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(groupedSink(name), null).open(tp)) {
            // Groups 0-2 and 3-4 end; 5-6 is open. batch.size 2 makes the task flush inside this put.
            d.deliver(recs(topic, 0, 7, 2, 4));
            assertThat(d.commit()).containsEntry(tp, 5L);
            assertThat(ids(topic)).containsExactly("0", "1", "2", "3", "4");
            assertThat(nextOffset(name, topic, 0)).isEqualTo(5);
            assertThat(d.context.metric("sink-open-group-records")).isEqualTo(2.0);
            d.deliver(recs(topic, 7, 8)); // still open
            assertThat(d.commit()).containsEntry(tp, 5L);
            assertThat(ids(topic)).hasSize(5);
            d.deliver(recs(topic, 8, 9, 8));
            assertThat(d.commit()).containsEntry(tp, 9L);
        }
        assertThat(ids(topic)).containsExactly("0", "1", "2", "3", "4", "5", "6", "7", "8");
        assertThat(transactions(topic, 0, 2)).as("group 0-2").isEqualTo(1);
        assertThat(transactions(topic, 3, 4)).as("group 3-4").isEqualTo(1);
        assertThat(transactions(topic, 5, 8)).as("group 5-8, over three puts").isEqualTo(1);
        assertThat(nextOffset(name, topic, 0)).isEqualTo(9);
    }

    @Test
    void afterARestartTheConsumerRewindsToTheGroupsStartAndTheGroupComesWhole() throws Exception {
        String topic = unique("grp_restart");
        createTable(topic);
        String name = unique("grp_restart_sink");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(groupedSink(name), null).open(tp)) {
            d.deliver(recs(topic, 0, 5, 1));
            assertThat(d.commit()).containsEntry(tp, 2L);
        } // the task stops with 2-4 open: they are lost with it, and uncommitted
        assertThat(ids(topic)).containsExactly("0", "1");
        try (SinkDriver d = new SinkDriver(groupedSink(name), null).open(tp)) {
            assertThat(d.context.offsets).as("rewound to the open group's start").containsEntry(tp, 2L);
            // The consumer re-reads from there; a record before it (a stale re-delivery) is dropped.
            d.deliver(recs(topic, 1, 4));
            d.deliver(recs(topic, 4, 6, 5));
            assertThat(d.commit()).containsEntry(tp, 6L);
        }
        assertThat(ids(topic)).containsExactly("0", "1", "2", "3", "4", "5");
        assertThat(transactions(topic, 2, 5)).isEqualTo(1);
        assertThat(db.scalar("SELECT count(*) FROM \"" + topic + "\" WHERE name = 'r1'")).isEqualTo(1);
    }

    @Test
    void aReDeliveredOpenGroupAndARevokedOneAreEachWrittenOnce() throws Exception {
        String topic = unique("grp_redeliver");
        TombstoneTest.createAuditedTable(topic);
        String name = unique("grp_redeliver_sink");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(groupedSink(name), null).open(tp)) {
            d.deliver(recs(topic, 0, 2));
            d.deliver(recs(topic, 0, 3, 2)); // the same records again (a retried batch), then the group's end
            assertThat(d.commit()).containsEntry(tp, 3L);
            d.deliver(recs(topic, 3, 5));
            d.task.close(List.of(tp)); // revoked with 3-4 open: dropped, uncommitted
            assertThat(d.context.metric("sink-open-group-records")).isZero();
            d.open(tp);
            assertThat(d.context.offsets).containsEntry(tp, 3L);
            d.deliver(recs(topic, 3, 6, 5));
            assertThat(d.commit()).containsEntry(tp, 6L);
        }
        assertThat(TombstoneTest.audit(topic)).containsExactly("INSERT 0 r0", "INSERT 1 r1", "INSERT 2 r2", "INSERT 3 r3",
                "INSERT 4 r4", "INSERT 5 r5");
    }

    @Test
    void aPartitionOtherThanZeroFailsTheTaskSayingWhy() {
        String topic = unique("grp_parts");
        try (SinkDriver d = new SinkDriver(groupedSink(unique("grp_parts_sink")), null)) {
            assertThatThrownBy(() -> d.open(new TopicPartition(topic, 0), new TopicPartition(topic, 1)))
                    .isInstanceOf(ConnectException.class)
                    .hasMessageContaining(ExactlyOnceJdbcSinkConfig.CHANGELOG_GROUP_HEADER)
                    .hasMessageContaining("partition 1")
                    .hasMessageContaining("one partition");
        }
    }

    @Test
    void theHeaderEndsAGroupWhenItsValueIsTrueInAnyForm() {
        assertThat(RecordBuffer.endsGroup(withHeader(true), END)).isTrue();
        assertThat(RecordBuffer.endsGroup(withHeader("true"), END)).isTrue();
        assertThat(RecordBuffer.endsGroup(withHeader("TRUE".getBytes(StandardCharsets.UTF_8)), END)).isTrue();
        assertThat(RecordBuffer.endsGroup(withHeader(false), END)).isFalse();
        assertThat(RecordBuffer.endsGroup(withHeader("no"), END)).isFalse();
        assertThat(RecordBuffer.endsGroup(withHeader(null), END)).isFalse();
        assertThat(RecordBuffer.endsGroup(TombstoneTest.row("t", 0, 1, "x"), END)).isFalse();
    }

    private static SinkRecord withHeader(Object value) {
        SinkRecord r = TombstoneTest.row("t", 0, 1, "x");
        r.headers().add(END, value, null);
        return r;
    }

    @Test
    void groupingWithEnrichmentOrABadHeaderNameIsRefusedAtValidation() {
        Map<String, String> p = groupedSink(unique("grp_validate"));
        p.put("enrich.table", "public.users");
        p.put("replica.name", "users");
        ConfigValue v = new ExactlyOnceJdbcSinkConnector().validate(p).configValues().stream()
                .filter(c -> c.name().equals(ExactlyOnceJdbcSinkConfig.CHANGELOG_GROUP_HEADER)).findFirst().orElseThrow();
        assertThat(v.errorMessages()).singleElement().asString().contains("enrichment").contains("enrich.table");

        Map<String, String> q = groupedSink(unique("grp_validate"));
        q.put(ExactlyOnceJdbcSinkConfig.CHANGELOG_GROUP_HEADER, "asof.view\u0000end");
        ConfigValue w = new ExactlyOnceJdbcSinkConnector().validate(q).configValues().stream()
                .filter(c -> c.name().equals(ExactlyOnceJdbcSinkConfig.CHANGELOG_GROUP_HEADER)).findFirst().orElseThrow();
        assertThat(w.errorMessages()).singleElement().asString().contains("control character");
    }

}
