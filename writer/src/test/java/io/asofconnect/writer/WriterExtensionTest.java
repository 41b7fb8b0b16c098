package io.asofconnect.writer;

import io.asofconnect.writer.testing.TargetDatabase;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The writer's extension for hosts that write rows of their own ({@link PartitionState#emit}) and keep tables of
 * their own ({@link SideTables}) in its transactions, against a real Postgres.
 */
class WriterExtensionTest {
    private static final String CONNECTOR = "join";
    private static final Schema ROW = SchemaBuilder.struct().name("row")
            .field("id", Schema.INT64_SCHEMA).field("v", Schema.OPTIONAL_STRING_SCHEMA).build();
    private static final Schema NO_ID = SchemaBuilder.struct().name("noid").field("v", Schema.OPTIONAL_STRING_SCHEMA).build();
    private static final RowMappingRules RULES = new RowMappingRules(WriterSettings.TOPIC_PLACEHOLDER, InsertMode.INSERT,
            PrimaryKeyMode.RECORD_VALUE, List.of("id"), false);
    private static final TopicPartition TP0 = new TopicPartition("in", 0);
    private static final TopicPartition TP1 = new TopicPartition("in", 1);
    private static final AtomicInteger SCHEMAS = new AtomicInteger();
    private static final BatchWriter.BadRecordHandler NO_BAD_RECORDS = (r, e) -> {
        throw new AssertionError("unexpected bad record", e);
    };

    private static TargetDatabase db;

    private String schema;
    private final List<ExactlyOnceWriter> writers = new ArrayList<>();

    @BeforeAll
    static void startDatabase() throws Exception {
        db = TargetDatabase.start();
    }

    @AfterAll
    static void stopDatabase() throws Exception {
        if (db != null) {
            db.close();
        }
    }

    @BeforeEach
    void newSchema() throws SQLException {
        schema = "s" + SCHEMAS.incrementAndGet();
        db.execute("CREATE SCHEMA " + schema);
    }

    @AfterEach
    void closeWriters() {
        writers.forEach(ExactlyOnceWriter::close);
    }

    // ---- emitted rows ----

    @Test
    void emittedRowsCommitWithTheRecordsAndOffsetsInOneTransaction() throws Exception {
        Side side = new Side();
        CountingMetrics metrics = new CountingMetrics();
        ExactlyOnceWriter w = writer(side, metrics);
        PartitionState s = claimOne(w, TP0);
        s.accept(record(TP0, 0, 0));
        s.accept(record(TP0, 1, 1));
        s.emit(row(100));
        s.emit(row(101));

        assertThat(w.flush(List.of(s), NO_BAD_RECORDS, new Revocations())).isTrue();

        assertThat(ids("in")).containsExactly("0", "1");
        assertThat(ids("out")).containsExactly("100", "101");
        assertThat(nextOffset(TP0)).isEqualTo(2);
        // One transaction wrote the records' rows, the emitted rows and the offsets row.
        List<String> xmins = new ArrayList<>(db.column("SELECT xmin::text FROM " + schema + ".\"in\""));
        xmins.addAll(db.column("SELECT xmin::text FROM " + schema + ".\"out\""));
        xmins.addAll(db.column("SELECT xmin::text FROM " + schema + ".offsets WHERE kafka_partition = 0"));
        assertThat(xmins).hasSize(5).containsOnly(xmins.get(0));
        assertThat(metrics.records).isEqualTo(4);
        assertThat(metrics.written).isEqualTo(4);
        assertThat(s.emitted()).isEmpty();
        assertThat(s.hasUncommitted()).isFalse();

        // Another task takes the partition over: neither the next record nor the next emitted row commits.
        s.accept(record(TP0, 2, 2));
        s.emit(row(102));
        writer(new Side(), WriterMetrics.NONE).claim(List.of(TP0), 10_000);
        assertThatThrownBy(() -> w.flush(List.of(s), NO_BAD_RECORDS, new Revocations())).isInstanceOf(FencedException.class);
        assertThat(ids("in")).containsExactly("0", "1");
        assertThat(ids("out")).containsExactly("100", "101");
        assertThat(nextOffset(TP0)).isEqualTo(2);
    }

    @Test
    void aFlushThatOnlyEmitsCommitsTheRowsAndKeepsTheNextOffset() throws Exception {
        Side side = new Side();
        ExactlyOnceWriter w = writer(side, WriterMetrics.NONE);
        Map<TopicPartition, OffsetStore.Claim> claims = w.claim(List.of(TP0, TP1), 10_000);
        PartitionState s0 = state(TP0, claims);
        PartitionState s1 = state(TP1, claims);
        for (long o = 0; o < 5; o++) {
            s0.accept(record(TP0, o, o));
        }
        assertThat(w.flush(List.of(s0, s1), NO_BAD_RECORDS, new Revocations())).isTrue();
        assertThat(nextOffset(TP0)).isEqualTo(5);

        s0.emit(row(200));
        s0.emit(row(201));
        s1.emit(row(210)); // a partition that never committed an offset
        assertThat(s0.hasUncommitted()).isTrue();
        assertThat(s1.hasUncommitted()).isTrue();
        assertThat(w.flush(List.of(s0, s1), NO_BAD_RECORDS, new Revocations())).isTrue();

        assertThat(ids("out")).containsExactly("200", "201", "210");
        assertThat(nextOffset(TP0)).isEqualTo(5);
        assertThat(nextOffset(TP1)).isEqualTo(OffsetStore.NO_OFFSET);
        assertThat(s0.committedNext()).isEqualTo(5);
        assertThat(s0.emitted()).isEmpty();
        assertThat(s0.hasUncommitted()).isFalse();
        assertThat(s1.hasUncommitted()).isFalse();
        assertThat(side.written).containsExactly(List.of(TP0), List.of(TP0, TP1));

        // An emit-only flush is fenced like any other.
        s0.emit(row(202));
        writer(new Side(), WriterMetrics.NONE).claim(List.of(TP0), 10_000);
        assertThatThrownBy(() -> w.flush(List.of(s0), NO_BAD_RECORDS, new Revocations())).isInstanceOf(FencedException.class);
        assertThat(ids("out")).containsExactly("200", "201", "210");
    }

    @Test
    void aBadEmittedRowGoesToTheBadRecordHandler() throws Exception {
        CountingMetrics metrics = new CountingMetrics();
        ExactlyOnceWriter w = writer(new Side(), metrics);
        PartitionState s = claimOne(w, TP0);
        s.accept(record(TP0, 0, 0));
        s.emit(row(300));
        SinkRecord bad = new SinkRecord("out", 0, null, null, NO_ID, new Struct(NO_ID).put("v", "x"), 0);
        s.emit(bad);
        List<SinkRecord> reported = new ArrayList<>();

        assertThat(w.flush(List.of(s), (r, e) -> reported.add(r), new Revocations())).isTrue();

        assertThat(reported).containsExactly(bad);
        assertThat(ids("out")).containsExactly("300");
        assertThat(ids("in")).containsExactly("0");
        assertThat(metrics.records).isEqualTo(3);
        assertThat(metrics.written).isEqualTo(2);
    }

    // ---- side tables in the flush ----

    @Test
    void sideTablesAreWrittenAfterTheRowsAndBeforeTheOffsetsInTheFlushTransaction() throws Exception {
        Side side = new Side();
        ExactlyOnceWriter w = writer(side, WriterMetrics.NONE);
        PartitionState s = claimOne(w, TP0);
        s.accept(record(TP0, 0, 0));
        s.accept(record(TP0, 1, 1));
        s.emit(row(400));

        assertThat(w.flush(List.of(s), NO_BAD_RECORDS, new Revocations())).isTrue();

        assertThat(side.rowsSeenByWrite).isEqualTo(3); // records' and emitted rows already written
        assertThat(side.nextOffsetSeenByWrite).isEqualTo(OffsetStore.NO_OFFSET); // offsets not moved yet
        assertThat(sideRows()).containsExactly("in/0/2/1");
        assertThat(db.column("SELECT xmin::text FROM " + schema + ".side"))
                .isEqualTo(db.column("SELECT xmin::text FROM " + schema + ".offsets"));
    }

    @Test
    void aThrowingSideTableWriteCommitsNeitherRowsNorOffsets() throws Exception {
        Side side = new Side();
        ExactlyOnceWriter w = writer(side, WriterMetrics.NONE);
        PartitionState s = claimOne(w, TP0);
        s.accept(record(TP0, 0, 0));
        s.emit(row(500));
        side.failWrite = true;

        assertThatThrownBy(() -> w.flush(List.of(s), NO_BAD_RECORDS, new Revocations())).hasMessageContaining("side write failed");

        assertThat(side.written).hasSize(1);
        assertThat(ids("in")).isEmpty();
        assertThat(ids("out")).isEmpty();
        assertThat(sideRows()).isEmpty();
        assertThat(nextOffset(TP0)).isEqualTo(OffsetStore.NO_OFFSET);
        assertThat(s.hasUncommitted()).isTrue();

        side.failWrite = false;
        assertThat(w.flush(List.of(s), NO_BAD_RECORDS, new Revocations())).isTrue();
        assertThat(ids("in")).containsExactly("0");
        assertThat(ids("out")).containsExactly("500");
        assertThat(sideRows()).containsExactly("in/0/1/1");
        assertThat(nextOffset(TP0)).isEqualTo(1);
    }

    @Test
    void aFencedFlushRollsBackWhatTheSideTablesWrote() throws Exception {
        Side side = new Side();
        ExactlyOnceWriter w = writer(side, WriterMetrics.NONE);
        PartitionState s = claimOne(w, TP0);
        writer(new Side(), WriterMetrics.NONE).claim(List.of(TP0), 10_000);
        s.accept(record(TP0, 0, 0));
        s.emit(row(600));

        assertThatThrownBy(() -> w.flush(List.of(s), NO_BAD_RECORDS, new Revocations())).isInstanceOf(FencedException.class);

        assertThat(side.written).hasSize(1); // it ran, and was rolled back
        assertThat(sideRows()).isEmpty();
        assertThat(ids("in")).isEmpty();
        assertThat(ids("out")).isEmpty();
    }

    @Test
    void aChangedPartitionIsFlushedWithoutRecordsOrRows() throws Exception {
        Side side = new Side();
        ExactlyOnceWriter w = writer(side, WriterMetrics.NONE);
        PartitionState s = claimOne(w, TP0);
        PartitionState untouched = new PartitionState(TP1, 1, OffsetStore.NO_OFFSET);
        s.markChanged();
        assertThat(s.hasUncommitted()).isTrue();

        assertThat(w.flush(List.of(s, untouched), NO_BAD_RECORDS, new Revocations())).isTrue();

        assertThat(side.written).containsExactly(List.of(TP0));
        assertThat(sideRows()).containsExactly("in/0/-1/0");
        assertThat(nextOffset(TP0)).isEqualTo(OffsetStore.NO_OFFSET);
        assertThat(s.hasUncommitted()).isFalse();
        assertThat(w.flush(List.of(s, untouched), NO_BAD_RECORDS, new Revocations())).isTrue();
        assertThat(side.written).hasSize(1);
    }

    // ---- side tables in claim, reconcile, overwriteOffsets ----

    @Test
    void claimCreatesAndReadsTheSideTablesOnceTheEpochsAreTakenInItsTransaction() throws Exception {
        writer(new Side(), WriterMetrics.NONE).claim(List.of(TP0, TP1), 10_000); // epoch 1, committed
        Side side = new Side();
        side.checkEpochsOnRead = true;

        writer(side, WriterMetrics.NONE).claim(List.of(TP0, TP1), 10_000);

        assertThat(side.reads).containsExactly(List.of(TP0, TP1));
        assertThat(side.epochsInsideRead).isEqualTo(Map.of(TP0, 2L, TP1, 2L)); // after every epoch was taken
        assertThat(side.epochsOutsideRead).isEqualTo(Map.of(TP0, 1L, TP1, 1L)); // before the claim committed
        assertThat(db.column("SELECT to_regclass('" + schema + ".side')::text")).containsExactly(schema + ".side");
    }

    @Test
    void reconcileReadsTheSideTablesAfterTheEpochChecks() throws Exception {
        Side side = new Side();
        ExactlyOnceWriter w = writer(side, WriterMetrics.NONE);
        Map<TopicPartition, OffsetStore.Claim> claims = w.claim(List.of(TP0, TP1), 10_000);
        PartitionState s0 = state(TP0, claims);
        PartitionState s1 = state(TP1, claims);
        side.reads.clear();

        w.reconcile(List.of(s0, s1));
        assertThat(side.reads).containsExactly(List.of(TP0, TP1));

        writer(new Side(), WriterMetrics.NONE).claim(List.of(TP1), 10_000);
        assertThatThrownBy(() -> w.reconcile(List.of(s0, s1))).isInstanceOf(FencedException.class);
        assertThat(side.reads).hasSize(1); // a fenced reconcile reads nothing
    }

    @Test
    void overwriteOffsetsOverwritesTheSideTablesInItsTransaction() throws Exception {
        Side side = new Side();
        ExactlyOnceWriter w = writer(side, WriterMetrics.NONE);
        Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
        offsets.put(TP0, 7L);
        offsets.put(TP1, null);

        w.overwriteOffsets(offsets); // on a schema no claim has touched: the side tables are created first

        assertThat(side.overwritten).containsExactly(offsets);
        assertThat(sideRows()).containsExactly("in/0/7/0");
        assertThat(nextOffset(TP0)).isEqualTo(7);

        side.failOverwrite = true;
        assertThatThrownBy(() -> w.overwriteOffsets(Map.of(TP0, 9L))).hasMessageContaining("side overwrite failed");
        assertThat(nextOffset(TP0)).isEqualTo(7);
        assertThat(sideRows()).containsExactly("in/0/7/0");
    }

    // ---- PartitionState ----

    @Test
    void discardUncommittedForgetsEverythingSinceTheLastCommit() {
        PartitionState s = new PartitionState(TP0, 1, 5);
        SinkRecord r5 = record(TP0, 5, 5);
        s.accept(r5);
        s.accept(record(TP0, 6, 6));
        s.hold(record(TP0, 7, 7), 0, 0, 0);
        s.emit(row(1));
        s.markChanged();
        s.reported(6);

        s.discardUncommitted();

        assertThat(s.buffered()).isEmpty();
        assertThat(s.emitted()).isEmpty();
        assertThat(s.held()).isEmpty();
        assertThat(s.targetNext()).isEqualTo(5);
        assertThat(s.committedNext()).isEqualTo(5);
        assertThat(s.hasUncommitted()).isFalse();
        assertThat(s.isNew(r5)).isTrue();
        assertThat(s.wasReported(6)).isTrue();

        s.markChanged();
        assertThat(s.hasUncommitted()).isTrue();
        s.discardUncommitted();
        assertThat(s.hasUncommitted()).isFalse();
    }

    @Test
    void committedClearsEmittedRowsAndTheChangedMark() {
        PartitionState s = new PartitionState(TP0, 1, OffsetStore.NO_OFFSET);
        s.emit(row(1));
        assertThat(s.hasUncommitted()).isTrue();
        s.committed(OffsetStore.NO_OFFSET);
        assertThat(s.emitted()).isEmpty();
        assertThat(s.hasUncommitted()).isFalse();

        s.markChanged();
        s.committed(OffsetStore.NO_OFFSET);
        assertThat(s.hasUncommitted()).isFalse();
    }

    // ---- helpers ----

    private ExactlyOnceWriter writer(SideTables side, WriterMetrics metrics) {
        WriterSettings settings = new WriterSettings(CONNECTOR, db.url(), "postgres", null, schema, "offsets",
                SchemaEvolution.BASIC, RULES);
        ExactlyOnceWriter w = ExactlyOnceWriter.create(settings, "writer test", metrics, side);
        writers.add(w);
        return w;
    }

    private static PartitionState claimOne(ExactlyOnceWriter w, TopicPartition tp) throws SQLException {
        return state(tp, w.claim(List.of(tp), 10_000));
    }

    private static PartitionState state(TopicPartition tp, Map<TopicPartition, OffsetStore.Claim> claims) {
        OffsetStore.Claim c = claims.get(tp);
        return new PartitionState(tp, c.epoch(), c.nextOffset());
    }

    private static SinkRecord record(TopicPartition tp, long offset, long id) {
        return new SinkRecord(tp.topic(), tp.partition(), null, null, ROW, new Struct(ROW).put("id", id).put("v", "r"), offset);
    }

    /** A row of the host's making: table "out", no offset of its own. */
    private static SinkRecord row(long id) {
        return new SinkRecord("out", 0, null, null, ROW, new Struct(ROW).put("id", id).put("v", "e"), 0);
    }

    private List<String> ids(String table) throws SQLException {
        if (db.column("SELECT to_regclass('" + schema + ".\"" + table + "\"')::text").get(0) == null) {
            return List.of();
        }
        return db.column("SELECT id FROM " + schema + ".\"" + table + "\" ORDER BY id");
    }

    private long nextOffset(TopicPartition tp) throws SQLException {
        return Long.parseLong(db.column("SELECT next_offset FROM " + schema + ".offsets WHERE connector_name = '" + CONNECTOR
                + "' AND topic = '" + tp.topic() + "' AND kafka_partition = " + tp.partition()).get(0));
    }

    private List<String> sideRows() throws SQLException {
        return db.column("SELECT topic || '/' || kafka_partition || '/' || target_next || '/' || emitted FROM " + schema
                + ".side ORDER BY topic, kafka_partition");
    }

    private static final class CountingMetrics implements WriterMetrics {
        int records;
        int written;

        @Override
        public void committed(int records, int written, long nanos) {
            this.records += records;
            this.written += written;
        }

        @Override
        public void fenced() {
        }
    }

    /**
     * One row per partition (topic, partition, the next offset committed with it, the rows it emitted), and a record
     * of every call and of what the transaction showed at the time.
     */
    private final class Side implements SideTables {
        final String table = PostgresDialect.qualified(schema, "side");
        final String offsets = PostgresDialect.qualified(schema, "offsets");
        final List<List<TopicPartition>> reads = new ArrayList<>();
        final List<List<TopicPartition>> written = new ArrayList<>();
        final List<Map<TopicPartition, Long>> overwritten = new ArrayList<>();
        final Map<TopicPartition, Long> epochsInsideRead = new LinkedHashMap<>();
        final Map<TopicPartition, Long> epochsOutsideRead = new LinkedHashMap<>();
        boolean checkEpochsOnRead;
        boolean failWrite;
        boolean failOverwrite;
        long rowsSeenByWrite = -1;
        long nextOffsetSeenByWrite = Long.MIN_VALUE;

        @Override
        public void ensure(Connection c) throws SQLException {
            SideTables.createIfAbsent(c, table, "CREATE TABLE " + table + " (topic text NOT NULL, kafka_partition int NOT NULL,"
                    + " target_next bigint NOT NULL, emitted int NOT NULL, PRIMARY KEY (topic, kafka_partition))");
        }

        @Override
        public void read(Connection c, Collection<TopicPartition> partitions) throws SQLException {
            reads.add(List.copyOf(partitions));
            if (checkEpochsOnRead) {
                try (Connection outside = db.connect()) {
                    for (TopicPartition tp : partitions) {
                        epochsInsideRead.put(tp, epoch(c, tp));
                        epochsOutsideRead.put(tp, epoch(outside, tp));
                    }
                }
            }
        }

        private long epoch(Connection c, TopicPartition tp) throws SQLException {
            try (PreparedStatement ps = c.prepareStatement("SELECT epoch FROM " + offsets
                    + " WHERE connector_name = ? AND topic = ? AND kafka_partition = ?")) {
                ps.setString(1, CONNECTOR);
                ps.setString(2, tp.topic());
                ps.setInt(3, tp.partition());
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getLong(1) : -1;
                }
            }
        }

        @Override
        public void write(Connection c, List<PartitionState> dirty) throws SQLException {
            written.add(dirty.stream().map(PartitionState::partition).toList());
            rowsSeenByWrite = count(c, "in") + count(c, "out");
            nextOffsetSeenByWrite = scalar(c, "SELECT min(next_offset) FROM " + offsets);
            for (PartitionState s : dirty) {
                upsert(c, s.partition(), s.targetNext(), s.emitted().size());
            }
            if (failWrite) {
                throw new SQLException("side write failed");
            }
        }

        @Override
        public void overwrite(Connection c, Map<TopicPartition, Long> nextOffsets) throws SQLException {
            overwritten.add(new LinkedHashMap<>(nextOffsets));
            for (Map.Entry<TopicPartition, Long> e : nextOffsets.entrySet()) {
                if (e.getValue() == null) {
                    try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + table + " WHERE topic = ? AND kafka_partition = ?")) {
                        ps.setString(1, e.getKey().topic());
                        ps.setInt(2, e.getKey().partition());
                        ps.executeUpdate();
                    }
                } else {
                    upsert(c, e.getKey(), e.getValue(), 0);
                }
            }
            if (failOverwrite) {
                throw new SQLException("side overwrite failed");
            }
        }

        private void upsert(Connection c, TopicPartition tp, long targetNext, int emitted) throws SQLException {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " VALUES (?, ?, ?, ?)"
                    + " ON CONFLICT (topic, kafka_partition) DO UPDATE SET target_next = EXCLUDED.target_next, emitted = EXCLUDED.emitted")) {
                ps.setString(1, tp.topic());
                ps.setInt(2, tp.partition());
                ps.setLong(3, targetNext);
                ps.setInt(4, emitted);
                ps.executeUpdate();
            }
        }

        /** Rows of a table the flush may not have created yet, as this transaction sees them. */
        private long count(Connection c, String name) throws SQLException {
            String t = PostgresDialect.qualified(schema, name);
            try (PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
                ps.setString(1, t);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (!rs.getBoolean(1)) {
                        return 0;
                    }
                }
            }
            return scalar(c, "SELECT count(*) FROM " + t);
        }

        private long scalar(Connection c, String sql) throws SQLException {
            try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
