package io.asofconnect.windowjoin;

import io.asofconnect.metrics.testing.RecordingSinkTaskContext;
import io.asofconnect.writer.testing.TargetDatabase;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A task cut off after some of its flushes (stopped without a flush, as a crash leaves it) and continued by a new
 * task from what the target holds writes exactly the rows of a run without cuts, and both equal a nested loop over
 * the events. Real Postgres; the task is driven directly, its rewinds honoured as a consumer would.
 */
class JoinReplayTest {
    private static final String LEFT = "queries";
    private static final String RIGHT = "clicks";
    private static final int PARTITIONS = 2;
    private static final long BEFORE = 0;
    private static final long AFTER = 40;
    private static final long LATENESS = 15;
    private static final long END = 10_000_000;
    private static final Schema QUERY = SchemaBuilder.struct().name("query").field("session", Schema.STRING_SCHEMA)
            .field("url", Schema.STRING_SCHEMA).field("ts", Schema.INT64_SCHEMA).field("q", Schema.STRING_SCHEMA).build();
    private static final Schema CLICK = SchemaBuilder.struct().name("click").field("session", Schema.STRING_SCHEMA)
            .field("url", Schema.STRING_SCHEMA).field("ts", Schema.INT64_SCHEMA).build();

    private static TargetDatabase db;
    @TempDir
    Path state;

    @BeforeAll
    static void startDatabase() throws Exception {
        db = TargetDatabase.start();
    }

    @AfterAll
    static void stopDatabase() throws Exception {
        db.close();
    }

    /** The input log: per partition of each topic, its records in offset order. */
    private static Map<TopicPartition, List<SinkRecord>> log(long seed) {
        return log(seed, 0);
    }

    /** With {@code lateShare} of the records (in percent) behind the partition's watermark: late. */
    private static Map<TopicPartition, List<SinkRecord>> log(long seed, int lateShare) {
        Random random = new Random(seed);
        Map<TopicPartition, List<SinkRecord>> log = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            for (String topic : List.of(LEFT, RIGHT)) {
                List<SinkRecord> records = new ArrayList<>();
                long clock = 1_000;
                int n = 40 + random.nextInt(30);
                for (int i = 0; i < n; i++) {
                    clock += random.nextInt(6);
                    // Out of order within the lateness: never behind the greatest time so far minus the lateness.
                    long ts = random.nextInt(100) < lateShare
                            ? clock - 2 * LATENESS - random.nextInt(10)
                            : clock - random.nextInt((int) LATENESS);
                    String session = "s" + random.nextInt(4);
                    String url = "u" + random.nextInt(3);
                    Struct v = topic.equals(LEFT)
                            ? new Struct(QUERY).put("session", session).put("url", url).put("ts", ts).put("q", "q" + i)
                            : new Struct(CLICK).put("session", session).put("url", url).put("ts", ts);
                    records.add(new SinkRecord(topic, p, null, null, v.schema(), v, i, ts, TimestampType.CREATE_TIME));
                }
                // A record far ahead closes every window of the partition's pair: the end of the input, without a clock.
                // Its key is its topic's own, so the two ends never match each other; both have the same time, so
                // neither passes the other's window end and neither is ever written.
                Struct end = topic.equals(LEFT)
                        ? new Struct(QUERY).put("session", "end").put("url", LEFT).put("ts", END).put("q", "end")
                        : new Struct(CLICK).put("session", "end").put("url", RIGHT).put("ts", END);
                records.add(new SinkRecord(topic, p, null, null, end.schema(), end, n, clock, TimestampType.CREATE_TIME));
                log.put(new TopicPartition(topic, p), records);
            }
        }
        return log;
    }

    private Map<String, String> props(String name) {
        Map<String, String> p = new HashMap<>();
        p.put("name", name);
        p.put("topics", LEFT + "," + RIGHT);
        p.put(JoinConfig.LEFT_TOPIC, LEFT);
        p.put(JoinConfig.RIGHT_TOPIC, RIGHT);
        p.put("join.left.key.fields", "session,url");
        p.put("join.right.key.fields", "session,url");
        p.put("join.left.time.source", "FIELD");
        p.put("join.left.time.field", "ts");
        p.put("join.right.time.source", "FIELD");
        p.put("join.right.time.field", "ts");
        p.put(JoinConfig.WINDOW_BEFORE_MS, Long.toString(BEFORE));
        p.put(JoinConfig.WINDOW_AFTER_MS, Long.toString(AFTER));
        p.put(JoinConfig.LATENESS_MS, Long.toString(LATENESS));
        p.put(JoinConfig.IDLE_TIMEOUT_MS, "3600000");
        p.put(JoinConfig.TYPE, "FULL");
        p.put(JoinConfig.LATE_POLICY, "DROP");
        p.put(JoinConfig.OUTPUT_TABLE, name);
        p.put(JoinConfig.STATE_PATH, state.toString());
        p.put(JoinConfig.ADMIN_BOOTSTRAP, "unused:9092");
        p.put("connection.url", db.url());
        p.put("connection.user", "postgres");
        p.put("connection.password", "postgres");
        p.put("schema.evolution", "BASIC");
        p.put("batch.size", "1000000");
        p.put("batch.linger.ms", "3600000");
        return p;
    }

    /**
     * Runs a task over the whole log, in random batches from random partitions, flushing after each batch; after
     * the flushes named in {@code cuts} the task is stopped (a few more records taken and lost first) and a new task
     * continues from the positions it rewinds to.
     */
    private long replays;
    /** Rows of the late table found at the cuts: what a rebuild had to refuse again. */
    private long lateRecorded;

    private static Map<String, Long> committedNext(String name) throws Exception {
        Map<String, Long> next = new HashMap<>();
        for (String row : db.column("SELECT topic || '-' || kafka_partition || ' ' || next_offset FROM asof_connect_offsets"
                + " WHERE connector_name = '" + name + "'")) {
            String[] parts = row.split(" ");
            next.put(parts[0], Long.parseLong(parts[1]));
        }
        return next;
    }

    private void run(String name, Map<TopicPartition, List<SinkRecord>> log, long seed, List<Integer> cuts) throws Exception {
        Random random = new Random(seed);
        Map<TopicPartition, Integer> position = new HashMap<>();
        log.keySet().forEach(tp -> position.put(tp, 0));
        RecordingSinkTaskContext context = new RecordingSinkTaskContext(props(name), null);
        WindowJoinSinkTask task = startTask(name, log, position, context);
        int flushes = 0;
        while (position.entrySet().stream().anyMatch(e -> e.getValue() < log.get(e.getKey()).size())) {
            task.put(batch(log, position, context.paused, random));
            seek(context, position);
            task.preCommit(Map.of());
            flushes++;
            if (cuts.contains(flushes)) {
                task.put(batch(log, position, context.paused, random));
                // Twice: the second time right after a commit made before the other partitions replayed a record,
                // so the rebuild must start from where the first one did.
                for (int crash = 0; crash < 2; crash++) {
                    task.stop();
                    Map<String, Long> committed = committedNext(name);
                    lateRecorded += db.scalar("SELECT count(*) FROM asof_connect_join_late WHERE connector_name = '" + name + "'");
                    context = new RecordingSinkTaskContext(props(name), null);
                    task = startTask(name, log, position, context);
                    // The situation the test names: some partition is rewound below what the target committed, so
                    // records held in windows are replayed, not only the lost tail re-read.
                    replays += position.entrySet().stream()
                            .filter(e -> e.getValue() < committed.getOrDefault(e.getKey().toString(), -1L)).count();
                    task.put(oneRecord(log, position, context.paused));
                    seek(context, position);
                    task.preCommit(Map.of());
                }
            }
        }
        task.preCommit(Map.of());
        task.stop();
    }

    private WindowJoinSinkTask startTask(String name, Map<TopicPartition, List<SinkRecord>> log, Map<TopicPartition, Integer> position,
                                         RecordingSinkTaskContext context) {
        WindowJoinSinkTask task = new WindowJoinSinkTask();
        task.initialize(context);
        task.start(props(name));
        context.assignment.addAll(log.keySet());
        task.open(log.keySet());
        // The consumer seeks where the task asks; a partition it does not rewind was never committed: it starts at 0.
        log.keySet().forEach(tp -> position.put(tp, context.offsets.getOrDefault(tp, 0L).intValue()));
        context.offsets.clear();
        return task;
    }

    /** The consumer's side of {@code context.offset}: the next poll reads from there. */
    private static void seek(RecordingSinkTaskContext context, Map<TopicPartition, Integer> position) {
        context.offsets.forEach((tp, offset) -> position.put(tp, offset.intValue()));
        context.offsets.clear();
    }

    private static List<SinkRecord> oneRecord(Map<TopicPartition, List<SinkRecord>> log, Map<TopicPartition, Integer> position,
                                              Set<TopicPartition> paused) {
        return position.keySet().stream().filter(tp -> position.get(tp) < log.get(tp).size() && !paused.contains(tp))
                .sorted((a, b) -> a.toString().compareTo(b.toString())).findFirst()
                .map(tp -> List.of(log.get(tp).get(position.merge(tp, 1, Integer::sum) - 1))).orElse(List.of());
    }

    private static List<SinkRecord> batch(Map<TopicPartition, List<SinkRecord>> log, Map<TopicPartition, Integer> position,
                                          Set<TopicPartition> paused, Random random) {
        List<SinkRecord> batch = new ArrayList<>();
        for (int i = 0; i < 1 + random.nextInt(12); i++) {
            List<TopicPartition> open = position.keySet().stream()
                    .filter(tp -> position.get(tp) < log.get(tp).size() && !paused.contains(tp)).sorted(
                    (a, b) -> a.toString().compareTo(b.toString())).toList();
            if (open.isEmpty()) {
                break;
            }
            TopicPartition tp = open.get(random.nextInt(open.size()));
            int n = 1 + random.nextInt(5);
            for (int k = 0; k < n && position.get(tp) < log.get(tp).size(); k++) {
                batch.add(log.get(tp).get(position.get(tp)));
                position.merge(tp, 1, Integer::sum);
            }
        }
        return batch;
    }

    /** The test's own join: a nested loop over each pair's events, then each side's unmatched events (FULL). */
    private static boolean[] late(List<SinkRecord> records) {
        boolean[] late = new boolean[records.size()];
        long max = Long.MIN_VALUE;
        for (int i = 0; i < records.size(); i++) {
            long t = ((Struct) records.get(i).value()).getInt64("ts");
            late[i] = max != Long.MIN_VALUE && t < max - LATENESS;
            if (!late[i]) {
                max = Math.max(max, t);
            }
        }
        return late;
    }

    private static long lateCount(Map<TopicPartition, List<SinkRecord>> log) {
        long n = 0;
        for (List<SinkRecord> records : log.values()) {
            for (boolean b : late(records)) {
                n += b ? 1 : 0;
            }
        }
        return n;
    }

    private static List<String> oracle(Map<TopicPartition, List<SinkRecord>> log) {
        List<String> rows = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            List<SinkRecord> left = log.get(new TopicPartition(LEFT, p));
            List<SinkRecord> right = log.get(new TopicPartition(RIGHT, p));
            // Late records join nothing and are written nowhere (DROP): the test's own running maximum per partition.
            boolean[] lateL = late(left);
            boolean[] lateR = late(right);
            boolean[] lm = lateL.clone();
            boolean[] rm = lateR.clone();
            for (int i = 0; i < left.size() - 1; i++) {
                for (int j = 0; j < right.size() - 1; j++) {
                    Struct l = (Struct) left.get(i).value();
                    Struct r = (Struct) right.get(j).value();
                    long lt = l.getInt64("ts");
                    long rt = r.getInt64("ts");
                    if (lateL[i] || lateR[j]) {
                        continue;
                    }
                    if (l.getString("session").equals(r.getString("session")) && l.getString("url").equals(r.getString("url"))
                            && lt - BEFORE <= rt && rt <= lt + AFTER) {
                        rows.add(p + " " + i + " " + j + " MATCHED");
                        lm[i] = true;
                        rm[j] = true;
                    }
                }
            }
            for (int i = 0; i < left.size() - 1; i++) {
                if (!lm[i]) {
                    rows.add(p + " " + i + " -1 LEFT_ONLY");
                }
            }
            for (int j = 0; j < right.size() - 1; j++) {
                if (!rm[j]) {
                    rows.add(p + " -1 " + j + " RIGHT_ONLY");
                }
            }
        }
        return rows;
    }

    private static List<String> table(String name) throws Exception {
        return db.column("SELECT __partition || ' ' || __left_offset || ' ' || __right_offset || ' ' || __match FROM \"" + name + "\"");
    }

    private static List<String> fullRows(String name) throws Exception {
        return db.column("SELECT row(__partition, __left_offset, __right_offset, __match, __left_time, __right_time, left_session,"
                + " left_url, left_ts, left_q, right_session, right_url, right_ts)::text FROM \"" + name + "\" ORDER BY 1");
    }

    /**
     * Late records are dropped and recorded; a replay must refuse exactly those again, though the records that made
     * them late may lie before the held offset it replays from.
     */
    @ParameterizedTest
    @ValueSource(ints = {2, 4, 6})
    void aReplayRefusesTheLateRecordsTheFirstRunRefused(int cut) throws Exception {
        Map<TopicPartition, List<SinkRecord>> log = log(300 + cut, 8);
        assertThat(lateCount(log)).as("the generated log has late records").isPositive();
        run("lwhole" + cut, log, 21, List.of());
        replays = 0;
        lateRecorded = 0;
        run("lcut" + cut, log, 22 + cut, List.of(cut, cut + 1, cut + 3));
        assertThat(replays).isPositive();
        assertThat(lateRecorded).as("late records were recorded when the task was cut").isPositive();
        assertThat(table("lcut" + cut)).containsExactlyInAnyOrderElementsOf(oracle(log));
        assertThat(fullRows("lcut" + cut)).containsExactlyElementsOf(fullRows("lwhole" + cut));
        assertThat(db.scalar("SELECT count(*) FROM asof_connect_join_late WHERE connector_name = 'lwhole" + cut + "'"))
                .as("once every window has closed, no late record can be replayed: the ledger is pruned").isZero();
    }

    @Test
    void anUncutRunEqualsTheNestedLoop() throws Exception {
        Map<TopicPartition, List<SinkRecord>> log = log(1);
        run("uncut", log, 7, List.of());
        assertThat(table("uncut")).containsExactlyInAnyOrderElementsOf(oracle(log));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12})
    void aRunCutAfterSomeFlushesWritesTheRowsOfAnUncutRun(int cut) throws Exception {
        Map<TopicPartition, List<SinkRecord>> log = log(100 + cut);
        run("whole" + cut, log, 11, List.of());
        replays = 0;
        run("cut" + cut, log, 12 + cut, List.of(cut, cut + 1, cut + 3));
        assertThat(replays).as("a cut rewound some partition below its committed offset").isPositive();
        assertThat(table("cut" + cut)).containsExactlyInAnyOrderElementsOf(oracle(log));
        assertThat(fullRows("cut" + cut)).containsExactlyElementsOf(fullRows("whole" + cut));
    }
}
