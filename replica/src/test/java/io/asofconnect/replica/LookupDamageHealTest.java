package io.asofconnect.replica;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.replica.config.ReplicaConfig;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static io.asofconnect.common.testing.Bytes.indexOf;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * FAULTS 20 found by a lookup: a stored version that passes every checksum but does not decode (damaged before its
 * checksum was taken) loads without complaint and is found only when a lookup decodes it. The lookup then answers as
 * a store without history would, the replica quarantines the store and rebuilds it from a new snapshot in-process,
 * and lookups find the rows again.
 */
class LookupDamageHealTest {
    private static final String TABLE = "public.lookup_heal";
    private static final int ROWS = 20;
    private static final int DAMAGED = 7;
    /** Journal layout (see the store's Journal): a header, then records {@code length(4) crc32c(4) sequence(8) payload}. */
    private static final int JOURNAL_HEADER = 24;
    private static final int RECORD_HEADER = 16;
    private static SourceDb db;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDb() {
        db = SourceDb.start("logical");
        db.exec("CREATE TABLE " + TABLE + " (id int PRIMARY KEY, val text NOT NULL)");
        for (int id = 1; id <= ROWS; id++) {
            db.exec("INSERT INTO " + TABLE + " VALUES (" + id + ", '" + value(id) + "')");
        }
    }

    @AfterAll
    static void stopDb() {
        if (db != null) {
            db.close();
        }
    }

    /** Unique in the store's files, and shorter than 128 bytes, so that its length prefix is one byte. */
    private static String value(int id) {
        return String.format("lookup-heal-%04d-", id) + "v".repeat(40);
    }

    @Test
    void aLookupThatFindsAVersionDamagedAnswersWithoutHistoryAndTheReplicaRebuilds() throws Exception {
        Map<String, Object> props = db.props("lookupheal", "lookupheal_slot", dir, TABLE);
        Path storeFile = new ReplicaConfig(props).storeFile();
        Path journal;
        Path blocker;
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            catchUp(h);
            assertThat(valueAt(h, DAMAGED, watermark(h))).isEqualTo(value(DAMAGED));
            // A close writes the journal's commits into a new checkpoint. A non-empty directory where that
            // checkpoint's temp file goes makes the write fail, as a full disk would: the commits stay in the
            // journal, whose records the test can rewrite with valid checksums.
            long generation = journalGeneration(storeFile);
            journal = storeFile.resolveSibling(storeFile.getFileName() + ".journal-" + generation);
            blocker = Files.createDirectories(
                    storeFile.resolveSibling(storeFile.getFileName() + ".checkpoint-" + (generation + 1) + ".tmp"));
            Files.writeString(blocker.resolve("blocks-the-checkpoint"), "");
        }
        assertThat(journal).as("the close left the commits in the journal").exists();
        Files.delete(blocker.resolve("blocks-the-checkpoint"));
        Files.delete(blocker);
        damageValueKeepingChecksums(journal, value(DAMAGED));

        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            assertThat(h.stats().rebuilds()).as("the damage passes the open's checks").isZero();
            long before = watermark(h);
            assertThat(valueAt(h, 1, before)).as("an undamaged row is answered from the reopened store").isEqualTo(value(1));

            assertThat(h.asOf(TABLE, RowKey.of(DAMAGED), before)).as("the lookup that decodes the damaged version")
                    .isInstanceOf(LookupResult.OutOfHistory.class);
            // From then on no row is answered from the damaged store: times up to the watermark are out of history,
            // later ones not yet visible.
            assertThat(h.asOf(TABLE, RowKey.of(1), before)).isInstanceOf(LookupResult.OutOfHistory.class);
            assertThat(h.asOf(TABLE, RowKey.of(1), System.currentTimeMillis() + 3_600_000))
                    .isInstanceOf(LookupResult.NotYetVisible.class);

            // The rebuild: a new store whose history starts after the damage was found, once its snapshot is through.
            Awaitility.await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(100)).until(() ->
                    h.stats().rebuilds() == 1 && h.historyStart() > before && h.historyStart() <= watermark(h));
            long healed = watermark(h);
            for (int id = 1; id <= ROWS; id++) {
                assertThat(valueAt(h, id, healed)).as("key %d after the rebuild", id).isEqualTo(value(id));
            }
            assertThat(h.asOf(TABLE, RowKey.of(DAMAGED), before)).as("the damaged history is gone, not patched")
                    .isInstanceOf(LookupResult.OutOfHistory.class);

            long updatedAt = db.commit("UPDATE " + TABLE + " SET val = 'after-heal' WHERE id = " + DAMAGED);
            catchUp(h);
            assertThat(valueAt(h, DAMAGED, updatedAt)).as("the rebuilt replica streams on").isEqualTo("after-heal");
        }
    }

    /** The generation of the store's only journal file. */
    private static long journalGeneration(Path storeFile) throws IOException {
        String prefix = storeFile.getFileName() + ".journal-";
        try (Stream<Path> files = Files.list(storeFile.getParent())) {
            List<Long> generations = files.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(prefix))
                    .map(n -> Long.parseLong(n.substring(prefix.length()))).toList();
            assertThat(generations).as("journal files of %s", storeFile.getFileName()).hasSize(1);
            return generations.get(0);
        }
    }

    /**
     * Makes the stored {@code value}'s length prefix claim one byte more than its version holds, so that decoding
     * the version runs past its end, and gives the journal record that holds it a valid checksum again: damage
     * done before the checksum was taken, which no check on open can see.
     */
    private static void damageValueKeepingChecksums(Path journal, String value) throws IOException {
        byte[] bytes = Files.readAllBytes(journal);
        byte[] marker = value.getBytes(StandardCharsets.UTF_8);
        int at = indexOf(bytes, marker, 0);
        assertThat(at).as("the value is in the journal").isPositive();
        assertThat(indexOf(bytes, marker, at + 1)).as("the value is in the journal once").isNegative();
        assertThat(bytes[at - 1]).as("the byte before the value is its length").isEqualTo((byte) marker.length);
        bytes[at - 1] = (byte) (marker.length + 1);
        ByteBuffer b = ByteBuffer.wrap(bytes);
        int record = JOURNAL_HEADER;
        while (record + RECORD_HEADER + b.getInt(record) <= at) {
            record += RECORD_HEADER + b.getInt(record);
        }
        int length = b.getInt(record);
        CRC32C crc = new CRC32C();
        crc.update(ByteBuffer.allocate(12).putInt(length).putLong(b.getLong(record + 8)).array());
        crc.update(bytes, record + RECORD_HEADER, length);
        b.putInt(record + 4, (int) crc.getValue());
        Files.write(journal, bytes);
    }

    private static String valueAt(ReplicaHandle h, int id, long at) {
        LookupResult r = h.asOf(TABLE, RowKey.of(id), at);
        assertThat(r).as("key %d at %d", id, at).isInstanceOf(LookupResult.Found.class);
        return ((LookupResult.Found) r).version().row().getString("val");
    }

    private static long watermark(ReplicaHandle h) {
        return h.watermark().get();
    }

    private static void catchUp(ReplicaHandle h) throws InterruptedException {
        long now = System.currentTimeMillis();
        assertThat(h.watermark().await(now, Duration.ofSeconds(120))).as("watermark reaches %d (health %s)", now, h.health()).isTrue();
    }
}
