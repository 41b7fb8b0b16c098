package io.asofconnect.store;


import io.asofconnect.common.data.MalformedEncodingException;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mapdb.Serializer;
import org.mapdb.SortedTableMap;
import org.mapdb.volume.MappedFileVol;
import org.mapdb.volume.Volume;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * PackedRow's copy-on-write splicing against a sorted map of (valid-from, lsn, ordinal) → body, over random puts and
 * prunes; its well-formedness check, alone and on the checkpoint load path.
 */
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

    /**
     * The load runs that check on every row: a checkpoint entry whose checksum holds but whose packed header is
     * inconsistent is damage, and the store is quarantined and rebuilt, never loaded. The entry is rewritten here
     * with its checksum, and the digest the store state keeps over the row checksums, recomputed, so that only the
     * header check can object. The control goes through the same rewrite with the header intact and must reopen
     * with the row: what is caught is the header, not the rewrite.
     */
    @Test
    void aCheckpointRowWithAValidChecksumButABadHeaderIsQuarantinedOnOpen(@TempDir Path dir) throws IOException {
        // The packed history, as a checkpoint stores it: count(4), then per version validFrom(8) lsn(8) ordinal(4) bodyEnd(4).
        int second = 4 + PackedRow.ENTRY;
        Map<String, Consumer<ByteBuffer>> damages = new LinkedHashMap<>();
        damages.put("intact", h -> { });
        damages.put("versions out of order", h -> h.putLong(4, 30)); // the first version's valid-from 10 -> 30, after the second's 20
        damages.put("out of bounds", h -> h.putInt(second + 20, h.getInt(second + 20) + 1)); // the last body ends past the history
        damages.put("does not fit", h -> h.putInt(0, 1000)); // 1000 versions in a history of two
        for (Map.Entry<String, Consumer<ByteBuffer>> damage : damages.entrySet()) {
            String what = damage.getKey();
            Path file = dir.resolve(what.replace(' ', '-')).resolve("s.db");
            Files.createDirectories(file.getParent());
            Version v1 = new Version(10, new SourcePosition(5, 1), TestRows.row(1, 100, false));
            Version v2 = new Version(20, new SourcePosition(6, 1), TestRows.row(1, 200, true));
            try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
                store.put("public.t", RowKey.of(1), v1);
                store.put("public.t", RowKey.of(1), v2);
                store.commit();
            }
            // close() wrote the commit into a checkpoint and left an empty journal: the row is only in the checkpoint.
            Path checkpoint;
            try (Stream<Path> s = Files.list(file.getParent())) {
                checkpoint = s.filter(p -> p.getFileName().toString().startsWith("s.db.checkpoint-")).findFirst().orElseThrow();
            }
            rewriteTheRowEntry(checkpoint, damage.getValue());
            byte[] written = Files.readAllBytes(checkpoint);
            try (MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults())) {
                OpenOutcome outcome = store.openOutcome();
                if (what.equals("intact")) {
                    assertThat(outcome.kind()).as("the rewrite alone (reason %s)", outcome.reason()).isEqualTo(OpenOutcome.Kind.REOPENED);
                    assertThat(store.history("public.t", RowKey.of(1))).containsExactly(v1, v2);
                    continue;
                }
                assertThat(outcome.kind()).as("%s (reason %s)", what, outcome.reason()).isEqualTo(OpenOutcome.Kind.REBUILT);
                assertThat(outcome.reason()).as(what).contains("a row does not decode").contains(what);
                Path aside = outcome.quarantined().orElseThrow();
                Path movedCheckpoint = aside.resolveSibling(aside.getFileName() + checkpoint.getFileName().toString().substring("s.db".length()));
                assertThat(Files.readAllBytes(movedCheckpoint)).as("%s: the damaged checkpoint kept aside", what).isEqualTo(written);
                assertThat(store.history("public.t", RowKey.of(1))).as(what).isEmpty();
            }
        }
    }

    /**
     * Reads the checkpoint's entries with MapDB, applies {@code damage} to its one row entry's packed history, seals
     * that entry and the store state again, and writes them back as the same kind of MapDB sorted table. The format
     * (Checkpoint's javadoc): each value is {@code crc32c(4) last(1) bytes}, the checksum over the key and the rest of
     * the value; the table sizes sort first (table id 0), the state last (FFFFFFFF) and holds, after format(4) and
     * generation(8), the number of row entries(8) and a CRC32C over their checksums(4).
     */
    private static void rewriteTheRowEntry(Path checkpoint, Consumer<ByteBuffer> damage) throws IOException {
        List<byte[][]> entries = new ArrayList<>();
        Volume in = new MappedFileVol(checkpoint.toFile(), true, 0L, 20, true, 0L, false);
        try {
            SortedTableMap<byte[], byte[]> map = SortedTableMap.Companion.open(in, Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY);
            Iterator<Map.Entry<byte[], byte[]>> it = map.entryIterator();
            while (it.hasNext()) {
                Map.Entry<byte[], byte[]> e = it.next();
                entries.add(new byte[][]{e.getKey().clone(), e.getValue().clone()});
            }
        } finally {
            in.close();
        }
        CRC32C digest = new CRC32C();
        int rows = 0;
        for (byte[][] e : entries) {
            int table = ByteBuffer.wrap(e[0]).getInt(0);
            if (table != 0 && table != -1) {
                rows++;
                damage.accept(ByteBuffer.wrap(e[1], 5, e[1].length - 5).slice());
                seal(e);
                digest.update(e[1], 0, 4);
            }
        }
        assertThat(rows).as("row entries").isEqualTo(1);
        byte[][] state = entries.get(entries.size() - 1);
        assertThat(ByteBuffer.wrap(state[0]).getInt(0)).as("the state's key").isEqualTo(-1);
        ByteBuffer.wrap(state[1]).putInt(5 + 4 + 8 + 8, (int) digest.getValue());
        seal(state);
        Files.delete(checkpoint);
        Volume out = new MappedFileVol(checkpoint.toFile(), false, 0L, 20, true, 0L, false);
        try {
            SortedTableMap.Sink<byte[], byte[]> sink = SortedTableMap.Companion.create(out, Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY)
                    .pageSize(1 << 20).nodeSize(32).createFromSink();
            for (byte[][] e : entries) {
                sink.put(e[0], e[1]);
            }
            sink.create();
            out.sync();
        } finally {
            out.close();
        }
    }

    /** Sets an entry's checksum: CRC32C over its key and its value after the checksum. */
    private static void seal(byte[][] entry) {
        CRC32C c = new CRC32C();
        c.update(entry[0]);
        c.update(entry[1], 4, entry[1].length - 4);
        ByteBuffer.wrap(entry[1]).putInt(0, (int) c.getValue());
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
