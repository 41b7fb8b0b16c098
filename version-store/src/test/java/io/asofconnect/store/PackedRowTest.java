package io.asofconnect.store;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** PackedRow's copy-on-write splicing against a sorted map of (valid-from, lsn, ordinal) → body, over random puts and prunes. */
class PackedRowTest {
    private record Pos(long validFrom, long lsn, int ordinal) implements Comparable<Pos> {
        @Override
        public int compareTo(Pos o) {
            int c = Long.compare(validFrom, o.validFrom);
            c = c != 0 ? c : Long.compare(lsn, o.lsn);
            return c != 0 ? c : Integer.compare(ordinal, o.ordinal);
        }
    }

    @Test
    void randomPutsReplacesAndDropsMatchASortedModel() {
        long seed = System.nanoTime();
        Random rnd = new Random(seed);
        for (int round = 0; round < 200; round++) {
            TreeMap<Pos, byte[]> model = new TreeMap<>();
            byte[] key = new byte[rnd.nextInt(12)];
            rnd.nextBytes(key);
            byte[] row = null;
            for (int op = 0; op < 60; op++) {
                if (row != null && rnd.nextInt(10) == 0) {
                    int drop = rnd.nextInt(PackedRow.count(row) + 1);
                    row = drop == 0 ? row : PackedRow.withoutFirst(row, drop);
                    for (int i = 0; i < drop; i++) {
                        model.pollFirstEntry();
                    }
                } else {
                    Pos p = new Pos(rnd.nextInt(20), rnd.nextInt(3), rnd.nextInt(2));
                    byte[] body = new byte[1 + rnd.nextInt(40)];
                    rnd.nextBytes(body);
                    row = row == null
                            ? PackedRow.first(key, p.validFrom(), p.lsn(), p.ordinal(), body)
                            : PackedRow.with(row, p.validFrom(), p.lsn(), p.ordinal(), body);
                    model.put(p, body);
                }
                if (row != null) {
                    PackedRow.check(row);
                    assertThat(PackedRow.key(row)).as("key (seed %s)", seed).isEqualTo(key);
                    byte[] reloaded = PackedRow.keyed(key, 0, key.length, row, PackedRow.keyEnd(row), row.length);
                    assertThat(reloaded).as("a checkpoint's packed history, keyed again (seed %s)", seed).isEqualTo(row);
                }
                assertMatches(row, model, seed);
            }
        }
    }

    @Test
    void checkRejectsARepeatedOrReorderedVersionABodyOutOfBoundsAndAKeyPastTheEnd() {
        byte[] key = {1, 2, 3};
        byte[] row = PackedRow.with(PackedRow.first(key, 10, 5, 1, new byte[]{7}), 10, 5, 2, new byte[]{8, 9});
        PackedRow.check(row);
        int second = PackedRow.keyEnd(row) + 4 + PackedRow.ENTRY;
        byte[] repeated = row.clone();
        repeated[second + 19] = 1; // ordinal 2 -> 1: the same position as the first version
        assertThatThrownBy(() -> PackedRow.check(repeated)).isInstanceOf(MalformedEncodingException.class).hasMessageContaining("out of order");
        byte[] reordered = row.clone();
        reordered[second + 7] = 9; // valid-from 10 -> 9, before the first version's
        assertThatThrownBy(() -> PackedRow.check(reordered)).isInstanceOf(MalformedEncodingException.class).hasMessageContaining("out of order");
        byte[] outside = row.clone();
        outside[second + 23] = (byte) 0x7F; // the last body's end past the array
        assertThatThrownBy(() -> PackedRow.check(outside)).isInstanceOf(MalformedEncodingException.class).hasMessageContaining("out of bounds");
        byte[] longKey = row.clone();
        longKey[0] = (byte) 0x7F; // key length Integer.MAX_VALUE: wraps an int when the header is added to it
        longKey[1] = longKey[2] = longKey[3] = (byte) 0xFF;
        assertThatThrownBy(() -> PackedRow.check(longKey)).isInstanceOf(MalformedEncodingException.class).hasMessageContaining("shorter than its key");
    }

    private static void assertMatches(byte[] row, TreeMap<Pos, byte[]> model, long seed) {
        if (model.isEmpty()) {
            assertThat(row).as("seed %s", seed).isNull();
            return;
        }
        List<Map.Entry<Pos, byte[]>> expected = new ArrayList<>(model.entrySet());
        assertThat(PackedRow.count(row)).as("seed %s", seed).isEqualTo(expected.size());
        for (int i = 0; i < expected.size(); i++) {
            Pos p = expected.get(i).getKey();
            assertThat(new Pos(PackedRow.validFrom(row, i), PackedRow.lsn(row, i), PackedRow.ordinal(row, i))).isEqualTo(p);
            assertThat(Arrays.copyOfRange(row, PackedRow.bodyStart(row, i), PackedRow.bodyEnd(row, i)))
                    .as("body %s (seed %s)", i, seed).isEqualTo(expected.get(i).getValue());
        }
        for (long t = -1; t <= 20; t++) {
            long at = t;
            int want = (int) expected.stream().filter(e -> e.getKey().validFrom() <= at).count() - 1;
            assertThat(PackedRow.floor(row, t)).as("floor %s (seed %s)", t, seed).isEqualTo(want);
        }
    }
}
