package io.asofconnect.windowjoin;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.windowjoin.state.Side;
import io.asofconnect.windowjoin.state.WindowStore;
import io.asofconnect.writer.OffsetStore;
import io.asofconnect.writer.PartitionState;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.sink.SinkRecord;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The join's rows equal a nested loop over the generated events, for every join type, whatever the interleaving of
 * the two partitions and wherever windows are closed (flushes). Times fall on and next to the window's bounds; some
 * records are late (the test decides which with its own running maximum per partition) and some have no key.
 */
class JoinerPropertyTest {
    private static final Schema VALUE = SchemaBuilder.struct().field("n", Schema.INT64_SCHEMA).build();

    /** A generated event: its key (null: none) and event time; its offset is its index on its side. */
    record Event(Integer key, long time) {
    }

    record Case(List<Event> left, List<Event> right, long before, long after, long lateness, long seed) {
    }

    @Provide
    Arbitrary<Case> cases() {
        Arbitrary<Event> events = Combinators.combine(
                Arbitraries.integers().between(0, 3).injectNull(0.1),
                Arbitraries.longs().between(-30, 30)).as(Event::new);
        return Combinators.combine(events.list().ofMaxSize(25), events.list().ofMaxSize(25),
                Arbitraries.longs().between(0, 6), Arbitraries.longs().between(0, 6), Arbitraries.longs().between(0, 15),
                Arbitraries.longs()).as(Case::new);
    }

    @Property(tries = 150)
    void rowsEqualANestedLoop(@ForAll("cases") Case c, @ForAll JoinType type) throws Exception {
        assertThat(run(c, type, new Random(c.seed()))).containsExactlyInAnyOrderElementsOf(oracle(c, type));
    }

    @Property(tries = 60)
    void twoInterleavingsWriteTheSameRows(@ForAll("cases") Case c) throws Exception {
        assertThat(run(c, JoinType.FULL, new Random(c.seed()))).containsExactlyInAnyOrderElementsOf(
                run(c, JoinType.FULL, new Random(~c.seed())));
    }

    private List<String> run(Case c, JoinType type, Random random) throws Exception {
        Path dir = Files.createTempDirectory("joiner-test");
        try (WindowStore store = WindowStore.create(dir, "test")) {
            JoinWindow window = new JoinWindow(c.before(), c.after(), c.lateness());
            Joiner joiner = new Joiner(store, window, type, new OutputRows("left", "l_", "r_"));
            PairState pair = new PairState(0, side(Side.LEFT), side(Side.RIGHT));
            int li = 0;
            int ri = 0;
            while (li < c.left().size() || ri < c.right().size()) {
                boolean takeLeft = ri >= c.right().size() || (li < c.left().size() && random.nextBoolean());
                Event e = takeLeft ? c.left().get(li) : c.right().get(ri);
                int offset = takeLeft ? li++ : ri++;
                joiner.add(pair, takeLeft ? Side.LEFT : Side.RIGHT, offset, e.key() == null ? null : RowKey.of(e.key()).encoded(),
                        e.time(), new Struct(VALUE).put("n", (long) offset));
                if (random.nextInt(4) == 0) {
                    joiner.closeWindows(pair);
                }
            }
            pair.left.watermark = Long.MAX_VALUE;
            pair.right.watermark = Long.MAX_VALUE;
            joiner.closeWindows(pair);
            assertThat(store.size()).isZero();
            assertThat(pair.left.pinCount() + pair.right.pinCount()).isZero();
            List<String> rows = new ArrayList<>();
            for (SinkRecord r : pair.left.writer.emitted()) {
                Struct s = (Struct) r.value();
                rows.add(s.get("__match") + " " + s.get("__left_offset") + " " + s.get("__right_offset"));
            }
            return rows;
        } finally {
            try (var files = Files.walk(dir)) {
                files.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static SideState side(Side side) {
        return new SideState(side, new PartitionState(new TopicPartition(side.name(), 0), 1, OffsetStore.NO_OFFSET),
                OffsetStore.NO_OFFSET, null, Set.of(), 0L);
    }

    /** The test's own lateness rule: late iff behind the greatest earlier time on the partition minus the lateness. */
    private static boolean[] late(List<Event> events, long lateness) {
        boolean[] late = new boolean[events.size()];
        long max = Long.MIN_VALUE;
        for (int i = 0; i < events.size(); i++) {
            long t = events.get(i).time();
            late[i] = max != Long.MIN_VALUE && t < max - lateness;
            if (!late[i]) {
                max = Math.max(max, t);
            }
        }
        return late;
    }

    private static List<String> oracle(Case c, JoinType type) {
        boolean[] lateL = late(c.left(), c.lateness());
        boolean[] lateR = late(c.right(), c.lateness());
        boolean[] matchedL = new boolean[c.left().size()];
        boolean[] matchedR = new boolean[c.right().size()];
        List<String> rows = new ArrayList<>();
        for (int i = 0; i < c.left().size(); i++) {
            for (int j = 0; j < c.right().size(); j++) {
                Event l = c.left().get(i);
                Event r = c.right().get(j);
                if (!lateL[i] && !lateR[j] && l.key() != null && l.key().equals(r.key())
                        && l.time() - c.before() <= r.time() && r.time() <= l.time() + c.after()) {
                    rows.add("MATCHED " + i + " " + j);
                    matchedL[i] = true;
                    matchedR[j] = true;
                }
            }
        }
        for (int i = 0; i < c.left().size(); i++) {
            if (!lateL[i] && !matchedL[i] && (type == JoinType.LEFT || type == JoinType.FULL)) {
                rows.add("LEFT_ONLY " + i + " -1");
            }
        }
        for (int j = 0; j < c.right().size(); j++) {
            if (!lateR[j] && !matchedR[j] && (type == JoinType.RIGHT || type == JoinType.FULL)) {
                rows.add("RIGHT_ONLY -1 " + j);
            }
        }
        return rows;
    }
}
