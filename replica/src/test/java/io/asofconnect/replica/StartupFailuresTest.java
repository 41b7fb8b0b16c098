package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.OpenOutcome;
import io.asofconnect.store.StoreOptions;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.errors.ConnectException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.postgresql.PGConnection;
import org.postgresql.PGProperty;
import org.postgresql.replication.PGReplicationStream;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static io.asofconnect.common.testing.Bytes.find;
import static io.asofconnect.common.testing.Bytes.flip;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/** Each misconfiguration or damaged state fails fast with its fix, or is rebuilt when so configured. */
class StartupFailuresTest {
    private static final Duration FAST = Duration.ofSeconds(20);
    private static SourceDb db;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDb() {
        db = SourceDb.start("logical");
        db.exec("CREATE TABLE public.t (id int PRIMARY KEY, v text)", "INSERT INTO public.t VALUES (1, 'one'), (2, 'two')",
                "CREATE TABLE public.nokey (a int, b int)", "CREATE ROLE plain_user LOGIN", "GRANT SELECT ON public.t TO plain_user");
    }

    @AfterAll
    static void stopDb() {
        if (db != null) {
            db.close();
        }
    }

    private Map<String, Object> props(String name) {
        Map<String, Object> p = db.props(name, name + "_slot", dir, "public.t");
        p.put(ReplicaConfig.CONNECT_TIMEOUT_MS, "2000");
        return p;
    }

    private static void failsFast(Map<String, Object> props, Class<? extends Throwable> type, String... fragments) {
        assertTimeoutPreemptively(FAST, () -> {
            var thrown = assertThatThrownBy(() -> ReplicaRegistry.acquire(props).close()).isInstanceOf(type);
            for (String f : fragments) {
                thrown.hasMessageContaining(f);
            }
            thrown.hasMessageNotContaining("unused");
        });
        assertThat(ReplicaRegistry.references((String) props.get(ReplicaConfig.NAME))).isZero();
    }

    @Test
    void unreachableServer() {
        Map<String, Object> p = props("unreachable");
        p.put(ReplicaConfig.PORT, Integer.toString(SourceDb.freePort()));
        failsFast(p, ConnectException.class, "unreachable", ReplicaConfig.HOSTNAME, ReplicaConfig.PORT);
    }

    @Test
    void missingDatabase() {
        Map<String, Object> p = props("nodb");
        p.put(ReplicaConfig.DBNAME, "no_such_db");
        failsFast(p, ConnectException.class, "does not exist", ReplicaConfig.DBNAME);
    }

    @Test
    void missingTable() {
        Map<String, Object> p = props("missing");
        p.put(ReplicaConfig.TABLES, "public.t,public.nope");
        failsFast(p, ConfigException.class, "public.nope does not exist", ReplicaConfig.TABLES);
    }

    @Test
    void tableWithoutKey() {
        Map<String, Object> p = props("nokey");
        p.put(ReplicaConfig.TABLES, "public.nokey");
        failsFast(p, ConfigException.class, "no primary key", ReplicaConfig.KEY_COLUMNS);
        p.put(ReplicaConfig.KEY_COLUMNS, "public.nokey:a");
        failsFast(p, ConfigException.class, "REPLICA IDENTITY FULL");
        p.put(ReplicaConfig.KEY_COLUMNS, "public.nokey:zz");
        failsFast(p, ConfigException.class, "no column zz");
    }

    @Test
    void noFreeReplicationSlot() {
        long free = 10 - db.queryLong("SELECT count(*) FROM pg_replication_slots");
        db.exec("SELECT pg_create_logical_replication_slot('filler_' || g, 'pgoutput') FROM generate_series(1, " + free + ") g");
        try {
            failsFast(props("noslot"), ConnectException.class, "all 10 replication slots", "max_replication_slots");
        } finally {
            db.exec("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'filler_%'");
        }
    }

    @Test
    void compositeTypeColumnsAreRefused() {
        db.exec("CREATE TYPE public.pair AS (x int, y int)", "CREATE TABLE public.composite (id int PRIMARY KEY, p public.pair)");
        Map<String, Object> p = props("composite");
        p.put(ReplicaConfig.TABLES, "public.composite");
        failsFast(p, ConfigException.class, "column p of table public.composite has a composite type");
    }

    @Test
    void userWithoutReplication() {
        Map<String, Object> p = props("norepl");
        p.put(ReplicaConfig.USER, "plain_user");
        failsFast(p, ConnectException.class, "REPLICATION", "ALTER ROLE");
    }

    @Test
    void slotInUseByAnotherProcess() throws Exception {
        Properties pp = new Properties();
        PGProperty.USER.set(pp, "postgres");
        PGProperty.REPLICATION.set(pp, "database");
        PGProperty.ASSUME_MIN_SERVER_VERSION.set(pp, "9.4");
        PGProperty.PREFER_QUERY_MODE.set(pp, "simple");
        try (Connection c = new org.postgresql.Driver().connect("jdbc:postgresql://127.0.0.1:" + db.pg.getPort() + "/postgres", pp)) {
            PGConnection pg = c.unwrap(PGConnection.class);
            pg.getReplicationAPI().createReplicationSlot().logical().withSlotName("held_slot").withOutputPlugin("test_decoding").make();
            try (PGReplicationStream stream = pg.getReplicationAPI().replicationStream().logical().withSlotName("held_slot").start()) {
                Map<String, Object> p = props("held");
                p.put(ReplicaConfig.SLOT_NAME, "held_slot");
                failsFast(p, ConnectException.class, "in use by another process", ReplicaConfig.SLOT_NAME);
                assertThat(stream.isClosed()).isFalse();
            }
        }
        db.exec("SELECT pg_drop_replication_slot('held_slot')");
    }

    @Test
    void storeFileLockedByAnotherOwner() throws Exception {
        Map<String, Object> p = props("locked");
        Files.createDirectories(dir);
        try (MapDbVersionStore other = MapDbVersionStore.open(dir.resolve("locked.mapdb"), StoreOptions.defaults())) {
            failsFast(p, ConnectException.class, "in use by another process", ReplicaConfig.PATH);
        }
    }

    @Test
    void droppedSlotIsAGapThatFailsOrRebuilds() throws Exception {
        Map<String, Object> p = props("gap");
        try (ReplicaHandle h = ReplicaRegistry.acquire(p)) {
            ReplicaCaptureTest.catchUp(h);
        }
        db.exec("SELECT pg_drop_replication_slot('gap_slot')");
        db.exec("UPDATE public.t SET v = 'changed while the slot was gone' WHERE id = 2");
        failsFast(p, ConnectException.class, "no longer exists", ReplicaConfig.ON_GAP + "=REBUILD");

        p.put(ReplicaConfig.ON_GAP, "REBUILD");
        long beforeRebuild = System.currentTimeMillis();
        try (ReplicaHandle h = ReplicaRegistry.acquire(p)) {
            ReplicaCaptureTest.catchUpAnsweringAtEveryWatermark(h, "public.t", RowKey.of(2), h.watermark().get());
            assertThat(h.replica().snapshotRecordsApplied()).isEqualTo(2);
            assertThat(h.historyStart()).isGreaterThanOrEqualTo(beforeRebuild - 1000);
            assertThat(h.asOf("public.t", RowKey.of(1), beforeRebuild - 60_000)).isInstanceOf(LookupResult.OutOfHistory.class);
            LookupResult now = h.asOf("public.t", RowKey.of(2), h.watermark().get());
            assertThat(((LookupResult.Found) now).version().row().getString("v")).isEqualTo("changed while the slot was gone");
        }
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.map(f -> f.getFileName().toString())).anyMatch(n -> n.startsWith("gap.mapdb.quarantined-"));
        }
    }

    /**
     * A damaged store, in each of its files, as a crash leaves them (copied while the replica runs, its last
     * commits only in the journal): the manifest's magic overwritten, a byte of the checkpoint's store state (the
     * table dictionary) flipped, a byte of the journal's first record flipped with a whole record after it. The
     * replica finds each on open, names the file, keeps it aside and rebuilds from a new snapshot, serving the
     * source's rows again.
     */
    @Test
    void corruptStoreFileIsQuarantinedAndRebuilt() throws Exception {
        Map<String, Object> p = props("corrupt");
        Path file = dir.resolve("corrupt.mapdb");
        // A clean stop first, so that the checkpoint each crash image starts from holds the rows, not only the journal.
        try (ReplicaHandle h = ReplicaRegistry.acquire(p)) {
            ReplicaCaptureTest.catchUp(h);
        }
        for (String damaged : List.of("manifest", "checkpoint", "journal")) {
            Map<String, byte[]> image;
            try (ReplicaHandle h = ReplicaRegistry.acquire(p)) {
                ReplicaCaptureTest.catchUp(h);
                // Every watermark the replica moves is a commit, one journal record: two are needed, the damaged one and one after it.
                for (int i = 0; wholeJournalRecords(storeFiles(file)).size() < 2; i++) {
                    assertThat(i).as("commits in the journal after %s catch-ups", i).isLessThan(10);
                    ReplicaCaptureTest.catchUp(h);
                }
                image = storeFiles(file);
            }
            // The replica's clean stop wrote a new checkpoint; put back the files as they were while it ran.
            for (String name : storeFiles(file).keySet()) {
                Files.delete(dir.resolve(name));
            }
            for (Map.Entry<String, byte[]> f : image.entrySet()) {
                Files.write(dir.resolve(f.getKey()), f.getValue());
            }
            String damagedFile;
            String reason;
            switch (damaged) {
                case "manifest" -> {
                    damagedFile = file.getFileName().toString();
                    reason = "not a version store manifest";
                    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
                        for (long pos = 0; pos < raf.length(); pos += 97) {
                            raf.seek(pos);
                            raf.write(0x5A);
                        }
                    }
                }
                case "checkpoint" -> {
                    damagedFile = only(image, ".checkpoint-");
                    reason = "the checkpoint " + damagedFile + " is damaged: an entry fails its checksum";
                    flip(dir.resolve(damagedFile), find(image.get(damagedFile), "public.t", "the checkpoint") + 3);
                }
                default -> {
                    damagedFile = only(image, ".journal-");
                    reason = "journal record 1 fails its checksum and valid records follow it";
                    long[] first = wholeJournalRecords(image).get(0);
                    flip(dir.resolve(damagedFile), first[0] + JOURNAL_RECORD_HEADER + (first[1] - first[0] - JOURNAL_RECORD_HEADER) / 2);
                }
            }
            try (ReplicaHandle h = ReplicaRegistry.acquire(p)) {
                OpenOutcome outcome = h.replica().store().openOutcome();
                assertThat(outcome.kind()).as("%s damaged (reason %s)", damaged, outcome.reason()).isEqualTo(OpenOutcome.Kind.REBUILT);
                assertThat(outcome.reason()).as("%s damaged", damaged).contains(reason);
                assertThat(outcome.quarantined()).as("the damaged file is kept aside")
                        .hasValueSatisfying(q -> {
                            assertThat(q).exists();
                            assertThat(q.getFileName().toString()).startsWith("corrupt.mapdb.quarantined-");
                            assertThat(q.resolveSibling(q.getFileName() + damagedFile.substring(file.getFileName().toString().length())))
                                    .as("the damaged %s aside", damaged).exists();
                        });
                ReplicaCaptureTest.catchUpAnsweringAtEveryWatermark(h, "public.t", RowKey.of(1), h.watermark().get());
                assertThat(h.replica().snapshotRecordsApplied()).as("%s damaged: a new snapshot", damaged).isEqualTo(2);
                assertThat(h.historyStart()).isGreaterThan(Long.MIN_VALUE).isLessThanOrEqualTo(h.watermark().get());
                // The rebuilt store holds what the source holds now, read back through the lookup.
                for (Map.Entry<Integer, String> row : Map.of(1, "one", 2, "two").entrySet()) {
                    LookupResult now = h.asOf("public.t", RowKey.of(row.getKey()), h.watermark().get());
                    assertThat(now).as("%s damaged: key %s", damaged, row.getKey()).isInstanceOf(LookupResult.Found.class);
                    assertThat(((LookupResult.Found) now).version().row().getString("v")).isEqualTo(row.getValue());
                }
                assertThat(h.asOf("public.t", RowKey.of(3), h.watermark().get())).isInstanceOf(LookupResult.Absent.class);
            }
        }
    }

    /** The journal's record header: length(4) crc32c(4) sequence(8); the file starts with a 24-byte header. */
    private static final int JOURNAL_RECORD_HEADER = 16;

    /**
     * The store's files by name, read now: the manifest (the store path), its checkpoint and its journal; not the
     * lock file, nor what earlier rebuilds moved aside.
     */
    private static Map<String, byte[]> storeFiles(Path file) throws IOException {
        String base = file.getFileName().toString();
        Map<String, byte[]> found = new TreeMap<>();
        try (Stream<Path> s = Files.list(file.getParent())) {
            for (Path f : s.toList()) {
                String name = f.getFileName().toString();
                if (name.equals(base) || name.matches(java.util.regex.Pattern.quote(base) + "\\.(checkpoint|journal)-[0-9]+")) {
                    found.put(name, Files.readAllBytes(f));
                }
            }
        }
        return found;
    }

    private static String only(Map<String, byte[]> files, String kind) {
        List<String> names = files.keySet().stream().filter(n -> n.contains(kind)).toList();
        assertThat(names).as("store files *%s*", kind).hasSize(1);
        return names.get(0);
    }

    /**
     * The whole records of the store's journal as {start, end} offsets, walked by the journal's format: after the
     * 24-byte header, each record whole inside the file, with a CRC32C over length, sequence and payload that holds.
     */
    private static List<long[]> wholeJournalRecords(Map<String, byte[]> files) {
        byte[] all = files.get(only(files, ".journal-"));
        ByteBuffer b = ByteBuffer.wrap(all);
        List<long[]> records = new ArrayList<>();
        int pos = 24;
        while (pos + JOURNAL_RECORD_HEADER <= all.length) {
            int length = b.getInt(pos);
            if (length < 0 || length > all.length - pos - JOURNAL_RECORD_HEADER) {
                break;
            }
            CRC32C crc = new CRC32C();
            crc.update(all, pos, 4);
            crc.update(all, pos + 8, 8 + length);
            if ((int) crc.getValue() != b.getInt(pos + 4)) {
                break;
            }
            records.add(new long[]{pos, pos + JOURNAL_RECORD_HEADER + length});
            pos += JOURNAL_RECORD_HEADER + length;
        }
        return records;
    }

    @Test
    void missingStoreFileWithAnExistingSlotTakesANewSnapshot() throws Exception {
        Map<String, Object> p = props("lostfile");
        try (ReplicaHandle h = ReplicaRegistry.acquire(p)) {
            ReplicaCaptureTest.catchUp(h);
        }
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(f -> f.getFileName().toString().startsWith("lostfile.mapdb")).toList()) {
                Files.delete(f);
            }
        }
        try (ReplicaHandle h = ReplicaRegistry.acquire(p)) {
            ReplicaCaptureTest.catchUp(h);
            assertThat(h.replica().snapshotRecordsApplied()).isEqualTo(2);
            assertThat(h.historyStart()).as("rows of a snapshot from an existing slot speak for now").isGreaterThan(Long.MIN_VALUE);
        }
    }

    @Test
    void aReplicationUserThatIsNotSuperuserStreamsAndProbes() throws Exception {
        db.exec("CREATE ROLE repl_user LOGIN REPLICATION", "GRANT SELECT ON public.t TO repl_user",
                "CREATE PUBLICATION repl_slot_pub FOR TABLE public.t");
        Map<String, Object> p = props("repl");
        p.put(ReplicaConfig.USER, "repl_user");
        try (ReplicaHandle h = ReplicaRegistry.acquire(p)) {
            ReplicaCaptureTest.catchUp(h);
            assertThat(h.asOf("public.t", RowKey.of(1), h.watermark().get())).isInstanceOf(LookupResult.Found.class);
        }
    }
}
