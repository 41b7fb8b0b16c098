package io.asofconnect.store;

import io.asofconnect.common.lookup.RowKey;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** RowTable against a HashMap of key → row, over random puts, replaces and removes that make it grow and reuse removed slots. */
class RowTableTest {

    private static byte[] row(RowKey key, long version) {
        return PackedRow.first(key.encoded(), version, version, 0, ByteBuffer.allocate(8).putLong(version).array());
    }

    @Test
    void randomPutsReplacesAndRemovesMatchAHashMap() {
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int round = 0; round < 20; round++) {
            RowTable table = new RowTable(rnd.nextInt(40));
            Map<RowKey, byte[]> model = new HashMap<>();
            int keySpace = 1 + rnd.nextInt(3_000);
            for (int op = 0; op < 20_000; op++) {
                RowKey key = rnd.nextBoolean() ? RowKey.of((long) rnd.nextInt(keySpace)) : RowKey.of("k" + rnd.nextInt(keySpace), rnd.nextInt(3));
                byte[] encoded = key.encoded();
                if (rnd.nextInt(4) == 0) {
                    assertThat(table.remove(encoded, 0, encoded.length)).as("remove (seed %s)", seed).isSameAs(model.remove(key));
                } else {
                    byte[] r = row(key, op);
                    assertThat(table.put(r)).as("put (seed %s)", seed).isSameAs(model.put(key, r));
                }
                assertThat(table.size()).isEqualTo(model.size());
            }
            for (int k = 0; k < keySpace; k++) {
                RowKey key = RowKey.of((long) k);
                byte[] encoded = key.encoded();
                assertThat(table.get(key)).as("get %s (seed %s)", k, seed).isSameAs(model.get(key));
                assertThat(table.get(encoded, 0, encoded.length)).isSameAs(model.get(key));
            }
            List<byte[]> walked = new ArrayList<>();
            table.forEach(walked::add);
            assertThat(walked).containsExactlyInAnyOrderElementsOf(model.values());
        }
    }

    @Test
    void aLookupOfAnAbsentKeyEndsInAFullyRemovedTable() {
        RowTable table = new RowTable(4);
        for (int round = 0; round < 100; round++) {
            for (long k = 0; k < 7; k++) {
                table.put(row(RowKey.of(k + round * 7), k));
            }
            for (long k = 0; k < 7; k++) {
                byte[] encoded = RowKey.of(k + round * 7).encoded();
                table.remove(encoded, 0, encoded.length);
            }
        }
        assertThat(table.size()).isZero();
        assertThat(table.get(RowKey.of(-1L))).isNull();
    }

    /**
     * Probes compare the stored hash before the key: keys whose hashes are equal (Java's "Aa" and "BB" give the
     * same polynomial over their encodings) must still be told apart by their bytes, through growth and removal.
     */
    @Test
    void keysWithEqualHashesStayDistinct() {
        RowKey aa = RowKey.of("Aa");
        RowKey bb = RowKey.of("BB");
        assertThat(aa.encodedHash()).as("precondition: a full hash collision").isEqualTo(bb.encodedHash());
        RowTable table = new RowTable(1);
        byte[] rowAa = row(aa, 1);
        byte[] rowBb = row(bb, 2);
        assertThat(table.put(rowAa)).isNull();
        assertThat(table.put(rowBb)).isNull();
        for (long k = 0; k < 100; k++) {
            table.put(row(RowKey.of(k), k));
        }
        assertThat(table.get(aa)).isSameAs(rowAa);
        assertThat(table.get(bb)).isSameAs(rowBb);
        byte[] encodedAa = aa.encoded();
        assertThat(table.remove(encodedAa, 0, encodedAa.length)).isSameAs(rowAa);
        assertThat(table.get(aa)).isNull();
        assertThat(table.get(bb)).isSameAs(rowBb);
        byte[] rowAa2 = row(aa, 3);
        assertThat(table.put(rowAa2)).isNull();
        assertThat(table.get(aa)).isSameAs(rowAa2);
        assertThat(table.get(bb)).isSameAs(rowBb);
        assertThat(table.size()).isEqualTo(102);
    }
}
