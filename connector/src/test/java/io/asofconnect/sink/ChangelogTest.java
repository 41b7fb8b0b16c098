package io.asofconnect.sink;

import io.asofconnect.sink.config.ExactlyOnceJdbcSinkConfig;
import io.asofconnect.writer.testing.TargetDatabase;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code changelog.op.field}: a retract changelog (Flink's +I, -U, +U, -D) applied by key against a real Postgres.
 * The same changes sent as a retract stream and as an upsert stream (row or tombstone) must leave the same table;
 * a -U and its +U in one flush must be applied in their order; a record without a known operation is a bad record.
 */
class ChangelogTest {
    static final String OP = "__op";
    static final Schema PAIR_KEY = SchemaBuilder.struct().field("a", Schema.INT64_SCHEMA).field("b", Schema.INT64_SCHEMA).build();
    static final Schema PAIR_ROW = SchemaBuilder.struct().field("a", Schema.INT64_SCHEMA).field("b", Schema.INT64_SCHEMA)
            .field("body", Schema.OPTIONAL_STRING_SCHEMA).build();
    static final Schema PAIR_CHANGE = SchemaBuilder.struct().field("a", Schema.INT64_SCHEMA).field("b", Schema.INT64_SCHEMA)
            .field("body", Schema.OPTIONAL_STRING_SCHEMA).field(OP, Schema.OPTIONAL_STRING_SCHEMA).build();
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

    static Map<String, String> retractSink(String name) {
        Map<String, String> p = TombstoneTest.upsertByKey(name, false);
        p.put(ExactlyOnceJdbcSinkConfig.CHANGELOG_OP_FIELD, OP);
        return p;
    }

    /** One change of the keyed table: {@code before} null for an insert, {@code after} null for a delete. */
    record Change(long a, long b, String before, String after) {
    }

    @Test
    void aRetractStreamLeavesTheTableItsUpsertStreamLeaves() throws Exception {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        // A small key space, so keys are deleted and inserted again, and one key changes several times per flush.
        TreeMap<String, String> model = new TreeMap<>();
        List<Change> changes = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            long a = 1 + random.nextInt(4);
            long b = 1 + random.nextInt(6);
            String key = a + " " + b;
            String before = model.get(key);
            String after = before != null && random.nextInt(4) == 0 ? null : "v" + i;
            changes.add(new Change(a, b, before, after));
            if (after == null) {
                model.remove(key);
            } else {
                model.put(key, after);
            }
        }
        String upsertTopic = unique("cl_upsert");
        String retractTopic = unique("cl_retract");
        for (String t : List.of(upsertTopic, retractTopic)) {
            db.execute("CREATE TABLE \"" + t + "\" (a bigint, b bigint, body text, PRIMARY KEY (a, b))");
        }
        List<SinkRecord> upserts = new ArrayList<>();
        List<SinkRecord> retracts = new ArrayList<>();
        for (Change ch : changes) {
            upserts.add(ch.after() == null ? pair(upsertTopic, upserts.size(), ch, null, null) : pair(upsertTopic, upserts.size(), ch, ch.after(), null));
            if (ch.before() == null) {
                retracts.add(pair(retractTopic, retracts.size(), ch, ch.after(), "+I"));
            } else if (ch.after() == null) {
                retracts.add(pair(retractTopic, retracts.size(), ch, ch.before(), "-D"));
            } else {
                retracts.add(pair(retractTopic, retracts.size(), ch, ch.before(), "-U"));
                retracts.add(pair(retractTopic, retracts.size(), ch, ch.after(), "+U"));
            }
        }
        Map<String, String> upsertProps = TombstoneTest.upsertByKey(unique("cl_upsert_sink"), true);
        applyInRandomFlushes(upsertProps, upsertTopic, upserts, new Random(seed + 1), null);
        int[] coverage = new int[2];
        applyInRandomFlushes(retractSink(unique("cl_retract_sink")), retractTopic, retracts, new Random(seed + 2), coverage);

        List<String> expected = model.entrySet().stream().map(e -> e.getKey() + " " + e.getValue()).toList();
        assertThat(coverage[0]).as("-U/+U pairs within one flush (seed %s)", seed).isPositive();
        assertThat(coverage[1]).as("-U/+U pairs split across two flushes (seed %s)", seed).isPositive();
        assertThat(changes.stream().filter(c -> c.after() == null)).as("deletes (seed %s)", seed).isNotEmpty();
        assertThat(pairRows(upsertTopic)).as("the upsert stream's table against the model (seed %s)", seed).isEqualTo(expected);
        assertThat(pairRows(retractTopic)).as("the retract stream's table against the upsert stream's (seed %s)", seed)
                .isEqualTo(pairRows(upsertTopic));
    }

    /**
     * Delivers {@code records} in chunks of random size, each chunk one flush (one transaction); counts in
     * {@code coverage} the -U/+U pairs whose halves share a flush ([0]) and those split by one ([1]).
     */
    private static void applyInRandomFlushes(Map<String, String> props, String topic, List<SinkRecord> records, Random random,
                                             int[] coverage) {
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(props, null).open(tp)) {
            int from = 0;
            while (from < records.size()) {
                int to = Math.min(records.size(), from + 1 + random.nextInt(30));
                d.deliver(records.subList(from, to));
                assertThat(d.commit()).containsEntry(tp, (long) to);
                if (coverage != null) {
                    for (int i = from; i < to; i++) {
                        if ("-U".equals(op(records.get(i)))) {
                            coverage[i + 1 < to ? 0 : 1]++;
                        }
                    }
                }
                from = to;
            }
        }
    }

    private static String op(SinkRecord r) {
        return r.value() instanceof Struct s && s.schema().field(OP) != null ? s.getString(OP) : null;
    }

    private static SinkRecord pair(String topic, long offset, Change ch, String body, String op) {
        Struct key = new Struct(PAIR_KEY).put("a", ch.a()).put("b", ch.b());
        if (body == null) {
            return new SinkRecord(topic, 0, PAIR_KEY, key, null, null, offset);
        }
        Schema schema = op == null ? PAIR_ROW : PAIR_CHANGE;
        Struct value = new Struct(schema).put("a", ch.a()).put("b", ch.b()).put("body", body);
        if (op != null) {
            value.put(OP, op);
        }
        return new SinkRecord(topic, 0, PAIR_KEY, key, schema, value, offset);
    }

    private static List<String> pairRows(String table) throws Exception {
        return db.column("SELECT a || ' ' || b || ' ' || body FROM \"" + table + "\" ORDER BY a, b");
    }

    // ---- order within a flush, bad records, schemaless values, schema evolution ----

    static final Schema CHANGE = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).field("name", Schema.STRING_SCHEMA)
            .field(OP, Schema.OPTIONAL_STRING_SCHEMA).build();

    static SinkRecord change(String topic, long offset, int id, String name, String op) {
        return new SinkRecord(topic, 0, TombstoneTest.KEY, new Struct(TombstoneTest.KEY).put("id", id), CHANGE,
                new Struct(CHANGE).put("id", id).put("name", name).put(OP, op), offset);
    }

    @Test
    void aMinusUAndItsPlusUInOneFlushDeleteThenInsertInThatOrder() throws Exception {
        String topic = unique("cl_order");
        TombstoneTest.createAuditedTable(topic);
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(retractSink(unique("cl_order_sink")), null).open(tp)) {
            d.deliver(List.of(change(topic, 0, 1, "v1", "+I"), change(topic, 1, 2, "w1", "+I")));
            assertThat(d.commit()).containsEntry(tp, 2L);
            d.deliver(List.of(change(topic, 2, 1, "v1", "-U"), change(topic, 3, 1, "v2", "+U"), change(topic, 4, 2, "w1", "-D"),
                    change(topic, 5, 2, "w2", "+I"), change(topic, 6, 2, "w2", "-U"), change(topic, 7, 2, "w3", "+U")));
            assertThat(d.commit()).containsEntry(tp, 8L);
        }
        assertThat(TombstoneTest.rows(topic)).containsExactly("1 v2", "2 w3");
        // Every delete and upsert of one flush in record order: nothing reordered, nothing left out.
        assertThat(TombstoneTest.audit(topic)).containsExactly("INSERT 1 v1", "INSERT 2 w1", "DELETE 1", "INSERT 1 v2", "DELETE 2",
                "INSERT 2 w2", "DELETE 2", "INSERT 2 w3");
    }

    @Test
    void aRecordWithoutAKnownOperationIsABadRecordThatSaysWhatWasExpected() throws Exception {
        String topic = unique("cl_bad");
        TombstoneTest.createAuditedTable(topic);
        String name = unique("cl_bad_sink");
        TopicPartition tp = new TopicPartition(topic, 0);
        ExactlyOnceJdbcSinkTaskTest.CollectingReporter reporter = new ExactlyOnceJdbcSinkTaskTest.CollectingReporter(name);
        try (SinkDriver d = new SinkDriver(retractSink(name), reporter).open(tp)) {
            d.deliver(List.of(
                    change(topic, 0, 1, "one", "+I"),
                    TombstoneTest.row(topic, 1, 2, "no op field"),
                    change(topic, 2, 3, "secret-op", "upsert-secret"),
                    change(topic, 3, 4, "null op", null),
                    new SinkRecord(topic, 0, null, Map.of("id", 5L), null, Map.of("id", 5L, "name", "n", OP, 7L), 4),
                    new SinkRecord(topic, 0, Schema.STRING_SCHEMA, "k", Schema.STRING_SCHEMA, "plain-text-secret", 5),
                    change(topic, 6, 6, "six", "+U")));
            assertThat(d.commit()).containsEntry(tp, 7L);
        }
        assertThat(reporter.records).extracting(SinkRecord::kafkaOffset).containsExactly(1L, 2L, 3L, 4L, 5L);
        List<String> messages = reporter.errors.stream().map(Throwable::getMessage).toList();
        assertThat(messages.get(0)).contains("has no operation field '__op' named in changelog.op.field")
                .contains("+I or +U (upsert the row the record key names) or -U or -D (delete it)");
        assertThat(messages.get(1)).contains("'__op' (changelog.op.field) holds none of +I, -U, +U, -D").doesNotContain("secret");
        assertThat(messages.get(2)).contains("'__op' (changelog.op.field) is null; expected a string");
        assertThat(messages.get(3)).contains("'__op' (changelog.op.field) is a Long; expected a string");
        assertThat(messages.get(4)).contains("the record value is a String").contains("changelog.op.field").doesNotContain("secret");
        assertThat(reporter.nextOffsetAtReport).as("reported before the offset passed them").allMatch(o -> o <= 1L);
        assertThat(TombstoneTest.rows(topic)).containsExactly("1 one", "6 six");
    }

    @Test
    void schemalessChangesApplyByTheirMapKey() throws Exception {
        String topic = unique("cl_schemaless");
        TombstoneTest.createAuditedTable(topic);
        TopicPartition tp = new TopicPartition(topic, 0);
        java.util.function.BiFunction<Long, Object[], SinkRecord> rec = (offset, a) -> new SinkRecord(topic, 0, null, Map.of("id", a[0]),
                null, Map.of("id", a[0], "name", a[1], OP, a[2]), offset);
        try (SinkDriver d = new SinkDriver(retractSink(unique("cl_schemaless_sink")), null).open(tp)) {
            d.deliver(List.of(rec.apply(0L, new Object[] {1L, "a", "+I"}), rec.apply(1L, new Object[] {2L, "b", "+I"}),
                    rec.apply(2L, new Object[] {1L, "a", "-U"}), rec.apply(3L, new Object[] {1L, "a2", "+U"}),
                    rec.apply(4L, new Object[] {2L, "b", "-D"})));
            assertThat(d.commit()).containsEntry(tp, 5L);
        }
        assertThat(TombstoneTest.rows(topic)).containsExactly("1 a2");
    }

    @Test
    void withSchemaEvolutionTheOperationIsNoColumn() throws Exception {
        String topic = unique("cl_basic");
        Map<String, String> p = retractSink(unique("cl_basic_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.SCHEMA_EVOLUTION, "BASIC");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (SinkDriver d = new SinkDriver(p, null).open(tp)) {
            // A delete first: the table does not exist yet, and a delete alone does not create it.
            d.deliver(List.of(change(topic, 0, 9, "x", "-D"), change(topic, 1, 1, "one", "+I"), change(topic, 2, 2, "two", "+I"),
                    change(topic, 3, 2, "two", "-D")));
            assertThat(d.commit()).containsEntry(tp, 4L);
        }
        assertThat(db.column("SELECT column_name FROM information_schema.columns WHERE table_name = '" + topic + "' ORDER BY ordinal_position"))
                .containsExactly("id", "name");
        assertThat(TombstoneTest.rows(topic)).containsExactly("1 one");
    }
}
