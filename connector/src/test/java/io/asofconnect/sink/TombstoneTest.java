package io.asofconnect.sink;

import io.asofconnect.writer.testing.TargetDatabase;

import io.asofconnect.sink.config.ExactlyOnceJdbcSinkConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.nextOffset;
import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Tombstones (null values) against a real Postgres: skipped or deleting as {@code delete.enabled} says, with and
 * without schemas, with null keys, and exactly once under redelivery. A trigger on each table records every row
 * change the sink makes, so a delete or insert applied twice shows even where the end state would hide it.
 */
class TombstoneTest {
    static final Schema KEY = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build();
    static final Schema VALUE = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).field("name", Schema.STRING_SCHEMA).build();
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

    /** A table (id int primary key, name text) whose every change lands in {@code <table>_audit}. */
    static void createAuditedTable(String table) throws Exception {
        String audit = table + "_audit";
        db.execute("CREATE TABLE \"" + table + "\" (id int PRIMARY KEY, name text)",
                "CREATE TABLE \"" + audit + "\" (n serial, change text)",
                "CREATE FUNCTION \"" + audit + "_fn\"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                        + " IF TG_OP = 'DELETE' THEN INSERT INTO \"" + audit + "\" (change) VALUES ('DELETE ' || OLD.id);"
                        + " ELSE INSERT INTO \"" + audit + "\" (change) VALUES (TG_OP || ' ' || NEW.id || ' ' || NEW.name); END IF;"
                        + " RETURN NULL; END $$",
                "CREATE TRIGGER \"" + audit + "_trg\" AFTER INSERT OR UPDATE OR DELETE ON \"" + table + "\""
                        + " FOR EACH ROW EXECUTE FUNCTION \"" + audit + "_fn\"()");
    }

    static List<String> audit(String table) throws Exception {
        return db.column("SELECT change FROM \"" + table + "_audit\" ORDER BY n");
    }

    static List<String> rows(String table) throws Exception {
        return db.column("SELECT id || ' ' || name FROM \"" + table + "\" ORDER BY id");
    }

    static Map<String, String> upsertByKey(String name, boolean deletes) {
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(name);
        p.put(ExactlyOnceJdbcSinkConfig.INSERT_MODE, "UPSERT");
        p.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE, "RECORD_KEY");
        p.put(ExactlyOnceJdbcSinkConfig.DELETE_ENABLED, Boolean.toString(deletes));
        return p;
    }

    static SinkRecord row(String topic, long offset, int id, String name) {
        return new SinkRecord(topic, 0, KEY, new Struct(KEY).put("id", id), VALUE, new Struct(VALUE).put("id", id).put("name", name), offset);
    }

    static SinkRecord tombstone(String topic, long offset, int id) {
        return new SinkRecord(topic, 0, KEY, new Struct(KEY).put("id", id), null, null, offset);
    }

    static SinkRecord keylessTombstone(String topic, long offset) {
        return new SinkRecord(topic, 0, null, null, null, null, offset);
    }

    @Test
    void withDeletesOffTombstonesAreSkippedEvenWithoutAKeyAndTheirOffsetsAdvance() throws Exception {
        String topic = unique("tomb_off");
        createAuditedTable(topic);
        String name = unique("tomb_off_sink");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(upsertByKey(name, false), null).open(tp)) {
            d.deliver(List.of(row(topic, 0, 1, "one"), tombstone(topic, 1, 1), keylessTombstone(topic, 2), row(topic, 3, 2, "two")));
            assertThat(d.commit()).containsEntry(tp, 4L);
            d.deliver(List.of(tombstone(topic, 4, 2)));
            assertThat(d.commit()).as("a batch of only tombstones still moves the offset").containsEntry(tp, 5L);
        }
        assertThat(rows(topic)).containsExactly("1 one", "2 two");
        assertThat(audit(topic)).containsExactly("INSERT 1 one", "INSERT 2 two");
        assertThat(nextOffset(name, topic, 0)).isEqualTo(5);
    }

    @Test
    void withDeletesOnATombstoneWithoutAKeyIsABadRecordAndTheOthersLandOnce() throws Exception {
        String topic = unique("tomb_nokey");
        createAuditedTable(topic);
        String name = unique("tomb_nokey_sink");
        TopicPartition tp = new TopicPartition(topic, 0);
        ExactlyOnceJdbcSinkTaskTest.CollectingReporter reporter = new ExactlyOnceJdbcSinkTaskTest.CollectingReporter(name);
        try (SinkDriver d = new SinkDriver(upsertByKey(name, true), reporter).open(tp)) {
            d.deliver(List.of(row(topic, 0, 1, "one"), keylessTombstone(topic, 1), row(topic, 2, 2, "two"), tombstone(topic, 3, 1)));
            assertThat(d.commit()).containsEntry(tp, 4L);
        }
        assertThat(reporter.records).extracting(SinkRecord::kafkaOffset).containsExactly(1L);
        assertThat(reporter.errors).singleElement().satisfies(e -> assertThat(e.getMessage()).contains("the record key is null"));
        assertThat(reporter.nextOffsetAtReport).as("reported before the offset passed it").allMatch(o -> o <= 1L);
        assertThat(audit(topic)).containsExactly("INSERT 1 one", "INSERT 2 two", "DELETE 1");
        assertThat(rows(topic)).containsExactly("2 two");

        String failing = unique("tomb_nokey_none");
        createAuditedTable(failing);
        String failingName = unique("tomb_nokey_none_sink");
        TopicPartition ftp = new TopicPartition(failing, 0);
        try (SinkDriver d = new SinkDriver(upsertByKey(failingName, true), null).open(ftp)) {
            d.deliver(List.of(row(failing, 0, 1, "one")));
            assertThat(d.commit()).containsEntry(ftp, 1L);
            d.deliver(List.of(keylessTombstone(failing, 1), row(failing, 2, 2, "two")));
            assertThat(d.commit()).containsEntry(ftp, 1L);
            assertThatThrownBy(() -> d.task.put(List.of())).isInstanceOf(ConnectException.class)
                    .hasMessageContaining("the record at " + failing + "-0@1 cannot be written")
                    .hasMessageContaining("the record key is null");
        }
        assertThat(rows(failing)).containsExactly("1 one");
        assertThat(nextOffset(failingName, failing, 0)).as("the offset stays before the keyless tombstone").isEqualTo(1);
    }

    @Test
    void aSchemalessTombstoneDeletesTheRowItsMapKeyNames() throws Exception {
        String topic = unique("tomb_schemaless");
        createAuditedTable(topic);
        String name = unique("tomb_schemaless_sink");
        TopicPartition tp = new TopicPartition(topic, 0);
        // As the JSON converter without schemas gives them: maps, and every integer a Long.
        java.util.function.BiFunction<Long, Long, SinkRecord> put = (offset, id) -> new SinkRecord(topic, 0, null, Map.of("id", id),
                null, Map.of("id", id, "name", "n" + id), offset);
        try (SinkDriver d = new SinkDriver(upsertByKey(name, true), null).open(tp)) {
            d.deliver(List.of(put.apply(0L, 1L), put.apply(1L, 2L),
                    new SinkRecord(topic, 0, null, Map.of("id", 1L), null, null, 2)));
            assertThat(d.commit()).containsEntry(tp, 3L);
        }
        assertThat(rows(topic)).containsExactly("2 n2");
        assertThat(audit(topic)).containsExactly("INSERT 1 n1", "INSERT 2 n2", "DELETE 1");
    }

    @Test
    void aTombstoneRedeliveredAfterARewindDeletesOnceAndTheReinsertAfterItStands() throws Exception {
        String topic = unique("tomb_replay");
        createAuditedTable(topic);
        String name = unique("tomb_replay_sink");
        Map<String, String> p = upsertByKey(name, true);
        TopicPartition tp = new TopicPartition(topic, 0);
        List<SinkRecord> history = List.of(row(topic, 0, 1, "v1"), tombstone(topic, 1, 1), row(topic, 2, 1, "v2"));
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            d.deliver(history.subList(0, 1));
            d.commit();
            d.deliver(history.subList(1, 3));
            assertThat(d.commit()).containsEntry(tp, 3L);
            // Connect redelivers a batch after a retriable failure elsewhere in the put.
            d.deliver(history.subList(1, 3));
            assertThat(d.commit()).containsEntry(tp, 3L);
        }
        // A restart whose consumer group is behind the target: the whole history, then the tombstone alone, again.
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            assertThat(d.context.offsets).containsEntry(tp, 3L);
            d.deliver(history);
            d.deliver(history.subList(1, 2));
            assertThat(d.commit()).containsEntry(tp, 3L);
        }
        assertThat(rows(topic)).containsExactly("1 v2");
        assertThat(audit(topic)).containsExactly("INSERT 1 v1", "DELETE 1", "INSERT 1 v2");
    }

    @Test
    void aTombstoneWhoseCommitReplyIsLostDeletesOnce() throws Exception {
        tombstoneWithTheCommitOutcomeLost("tomb_cut", CommitDroppingProxy::cutAfterNextCommit);
    }

    @Test
    void aTombstoneWhoseCommitNeverReachedTheServerDeletesOnce() throws Exception {
        tombstoneWithTheCommitOutcomeLost("tomb_drop", CommitDroppingProxy::dropNextCommit);
    }

    /** Deletes and re-inserts a row in a batch whose commit outcome the sink never hears, then redelivers that batch. */
    private static void tombstoneWithTheCommitOutcomeLost(String prefix, Consumer<CommitDroppingProxy> cut) throws Exception {
        String topic = unique(prefix);
        createAuditedTable(topic);
        Map<String, String> p = upsertByKey(unique(prefix + "_sink"), true);
        TopicPartition tp = new TopicPartition(topic, 0);
        List<SinkRecord> batch = List.of(tombstone(topic, 1, 1), row(topic, 2, 1, "v2"), tombstone(topic, 3, 2));
        try (CommitDroppingProxy proxy = new CommitDroppingProxy(db.port())) {
            p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_URL, "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/postgres?prepareThreshold=0");
            try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
                db.execute("INSERT INTO \"" + topic + "\" VALUES (2, 'by hand')");
                d.deliver(List.of(row(topic, 0, 1, "v1")));
                d.commit();
                d.deliver(batch);
                cut.accept(proxy);
                assertThat(d.commit()).containsEntry(tp, 1L);
                assertThat(proxy.fired).isTrue();
                d.deliver(batch);
                assertThat(d.commit()).containsEntry(tp, 4L);
            }
        }
        assertThat(rows(topic)).containsExactly("1 v2");
        assertThat(audit(topic)).containsExactly("INSERT 2 by hand", "INSERT 1 v1", "DELETE 1", "INSERT 1 v2", "DELETE 2");
    }
}
