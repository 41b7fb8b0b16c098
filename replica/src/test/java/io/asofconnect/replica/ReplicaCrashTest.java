package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.OpenOutcome;
import io.asofconnect.store.StoreOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SIGKILL of a JVM running the replica while changes stream, then a restart in a new JVM: the stored history
 * of every key equals what the database committed, no version missing or doubled (FAULTS 12, 13, 15).
 */
class ReplicaCrashTest {
    private static final int KEYS = 30;
    /** Versions past the snapshot the grouped-commit leg waits for before its kill: seconds of changes. */
    private static final int APPLIED_BEFORE_KILL = 200;
    private static SourceDb db;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDb() {
        db = SourceDb.start("logical");
        db.exec("CREATE TABLE public.crash (id int PRIMARY KEY, seq int NOT NULL)",
                "INSERT INTO public.crash SELECT g, 0 FROM generate_series(1, " + KEYS + ") g");
    }

    @AfterAll
    static void stopDb() {
        if (db != null) {
            db.close();
        }
    }

    /** One committed transaction: the keys it set to {@code seq}, at its commit millis. */
    private record Committed(long commitMillis, int seq, List<Integer> ids) {
    }

    @Test
    void sigkillWhileStreamingLosesAndDoublesNothing() throws Exception {
        killWhileStreamingThenCompare("crash", "public.crash", Map.of(), false);
    }

    /**
     * Commits grouped over many batches: only probes commit here, and with probes 10 minutes apart the replica
     * probes only when asked (for catching up, and at the stop), so nothing commits after it has caught up. The
     * kill lands once it reports hundreds of changes applied since, and a copy of the store taken after the kill
     * shows they were applied but never committed. The restart resumes from the committed offset, which the
     * server's slot never passed: nothing lost, nothing doubled.
     */
    @Test
    void sigkillBetweenGroupedCommitsLosesAndDoublesNothing() throws Exception {
        db.exec("CREATE TABLE public.grouped (id int PRIMARY KEY, seq int NOT NULL)",
                "INSERT INTO public.grouped SELECT g, 0 FROM generate_series(1, " + KEYS + ") g");
        killWhileStreamingThenCompare("grouped", "public.grouped", Map.of(
                ReplicaConfig.COMMIT_INTERVAL_MS, "60000",
                ReplicaConfig.COMMIT_MAX_RECORDS, "1000000",
                ReplicaConfig.WATERMARK_INTERVAL_MS, "600000"), true);
    }

    /**
     * @param uncommittedAtKill kill once the replica reports {@value #APPLIED_BEFORE_KILL} versions applied past the
     *                          snapshot, and show that some of what it applied was not in its store after the kill
     */
    private void killWhileStreamingThenCompare(String name, String table, Map<String, String> extraProps,
                                               boolean uncommittedAtKill) throws Exception {
        Path propsFile = dir.resolve(name + ".properties");
        Path stopFile = dir.resolve(name + "-stop");
        Properties p = new Properties();
        db.props(name, name + "_slot", dir.resolve("store"), table).forEach((k, v) -> p.setProperty(k, v.toString()));
        p.putAll(extraProps);
        try (OutputStream out = Files.newOutputStream(propsFile)) {
            p.store(out, null);
        }

        List<Committed> committed = new ArrayList<>();
        AtomicBoolean writing = new AtomicBoolean(true);
        Path firstLog = dir.resolve("first.log");
        Process first = uncommittedAtKill ? startReplicaJvm(propsFile, stopFile, firstLog, table, "versions")
                : startReplicaJvm(propsFile, stopFile, firstLog);
        Process second = null;
        try {
            awaitLine(first, firstLog, "STARTED", 90);
            CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> write(table, KEYS, committed, writing));
            if (uncommittedAtKill) {
                awaitLine(first, firstLog, l -> l.startsWith("APPLIED ") && appliedCount(l) >= KEYS + APPLIED_BEFORE_KILL,
                        "APPLIED " + (KEYS + APPLIED_BEFORE_KILL) + " or more", 120);
            } else {
                pause(2500);
            }
            first.destroyForcibly();
            assertThat(first.waitFor(30, TimeUnit.SECONDS)).isTrue();
            if (uncommittedAtKill) {
                long applied = Files.readAllLines(firstLog).stream().filter(l -> l.startsWith("APPLIED "))
                        .mapToLong(ReplicaCrashTest::appliedCount).max().orElseThrow();
                long kept = versionsKeptAfterKill(name, table);
                assertThat(applied).as("versions the killed replica had applied (%d) against those its store kept (%d):"
                        + " the difference was applied and not committed at the kill", applied, kept).isGreaterThan(kept);
            }
            pause(1000);
            second = startReplicaJvm(propsFile, stopFile, dir.resolve("second.log"));
            awaitLine(second, dir.resolve("second.log"), "STARTED", 90);
            pause(2000);
            writing.set(false);
            writer.get(60, TimeUnit.SECONDS);
            long last;
            synchronized (committed) {
                last = committed.get(committed.size() - 1).commitMillis();
            }
            Files.writeString(stopFile, Long.toString(last));
            assertThat(second.waitFor(120, TimeUnit.SECONDS)).as("second replica JVM stops").isTrue();
            String secondLog = Files.readString(dir.resolve("second.log"));
            assertThat(second.exitValue()).as(secondLog).isZero();
            assertThat(secondLog).as("the second JVM resumes the store, no new snapshot").contains("open: REOPENED").doesNotContain("REBUILT");
        } finally {
            writing.set(false);
            first.destroyForcibly();
            if (second != null) {
                second.destroyForcibly();
            }
        }

        Map<Integer, List<String>> expected = new HashMap<>();
        for (Committed c : committed) {
            for (int id : c.ids()) {
                expected.computeIfAbsent(id, k -> new ArrayList<>()).add(c.commitMillis() + "=" + c.seq());
            }
        }
        assertThat(committed.size()).as("transactions written").isGreaterThan(50);
        try (MapDbVersionStore store = MapDbVersionStore.open(dir.resolve("store").resolve(name + ".mapdb"), StoreOptions.defaults())) {
            for (int id = 1; id <= KEYS; id++) {
                List<Version> history = store.history(table, RowKey.of(id));
                assertThat(history.get(0).validFrom()).isEqualTo(Version.BEGINNING_OF_TIME);
                assertThat(history.get(0).row().getInt32("seq")).isZero();
                List<String> actual = history.subList(1, history.size()).stream()
                        .map(v -> v.validFrom() + "=" + v.row().getInt32("seq")).toList();
                assertThat(actual).as("history of key %d", id).containsExactlyElementsOf(expected.getOrDefault(id, List.of()));
            }
        }
    }

    @Test
    void sigkillDuringTheInitialSnapshotWhileWritersWriteConverges() throws Exception {
        int rows = 20_000;
        int hot = 200;
        db.exec("CREATE TABLE public.big (id int PRIMARY KEY, seq int NOT NULL, pad text)",
                "INSERT INTO public.big SELECT g, 0, repeat('x', 40) FROM generate_series(1, " + rows + ") g");
        Path propsFile = dir.resolve("snap.properties");
        Path stopFile = dir.resolve("snap-stop");
        Properties p = new Properties();
        db.props("snapcrash", "snapcrash_slot", dir.resolve("store"), "public.big").forEach((k, v) -> p.setProperty(k, v.toString()));
        // Commits inside the snapshot, so that the kill lands between two of them, after offsets that stop inside it.
        p.setProperty(ReplicaConfig.COMMIT_MAX_RECORDS, "2048");
        try (OutputStream out = Files.newOutputStream(propsFile)) {
            p.store(out, null);
        }
        List<Committed> committed = new ArrayList<>();
        AtomicBoolean writing = new AtomicBoolean(true);
        Process first = startReplicaJvm(propsFile, stopFile, dir.resolve("snap-first.log"));
        Process second = null;
        try {
            awaitLine(first, dir.resolve("snap-first.log"), "SNAPSHOT_IN_PROGRESS", 90);
            CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> write("public.big", hot, committed, writing));
            first.destroyForcibly();
            assertThat(first.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(Files.readString(dir.resolve("snap-first.log"))).as("killed before the snapshot was through").doesNotContain("STARTED");
            second = startReplicaJvm(propsFile, stopFile, dir.resolve("snap-second.log"));
            awaitLine(second, dir.resolve("snap-second.log"), "STARTED", 120);
            pause(1500);
            writing.set(false);
            writer.get(60, TimeUnit.SECONDS);
            long last;
            synchronized (committed) {
                last = committed.get(committed.size() - 1).commitMillis();
            }
            Files.writeString(stopFile, Long.toString(last));
            assertThat(second.waitFor(120, TimeUnit.SECONDS)).as("second replica JVM stops").isTrue();
            assertThat(second.exitValue()).as(Files.readString(dir.resolve("snap-second.log"))).isZero();
            assertThat(Files.readString(dir.resolve("snap-second.log"))).contains("initial snapshot was interrupted");
        } finally {
            writing.set(false);
            first.destroyForcibly();
            if (second != null) {
                second.destroyForcibly();
            }
        }
        Map<Integer, List<String>> expected = new HashMap<>();
        for (Committed c : committed) {
            for (int id : c.ids()) {
                expected.computeIfAbsent(id, k -> new ArrayList<>()).add(c.commitMillis() + "=" + c.seq());
            }
        }
        Map<Integer, Integer> inDb = new HashMap<>();
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SELECT id, seq FROM public.big")) {
            while (rs.next()) {
                inDb.put(rs.getInt(1), rs.getInt(2));
            }
        }
        try (MapDbVersionStore store = MapDbVersionStore.open(dir.resolve("store").resolve("snapcrash.mapdb"), StoreOptions.defaults())) {
            int keys = 0;
            for (RowKey ignored : store.keys("public.big")) {
                keys++;
            }
            assertThat(keys).isEqualTo(rows);
            // The snapshot was taken again after the crash: its rows speak for then, so history starts after it.
            long start = store.historyStart();
            assertThat(start).isGreaterThan(Long.MIN_VALUE).isLessThanOrEqualTo(store.watermark());
            for (int id = 1; id <= rows; id++) {
                List<Version> history = store.history("public.big", RowKey.of(id));
                assertThat(history).as("key %d", id).isNotEmpty();
                assertThat(history.get(history.size() - 1).row().getInt32("seq")).as("latest of key %d", id).isEqualTo(inDb.get(id));
                List<String> streamed = history.stream().filter(v -> v.validFrom() >= start)
                        .map(v -> v.validFrom() + "=" + v.row().getInt32("seq")).toList();
                List<String> committedSinceStart = expected.getOrDefault(id, List.of()).stream()
                        .filter(e -> Long.parseLong(e.substring(0, e.indexOf('='))) >= start).toList();
                assertThat(streamed).as("history of key %d since %d", id, start).containsExactlyElementsOf(committedSinceStart);
            }
        }
    }

    /**
     * FAULTS 13: one COPY writes many rows with heap multi-inserts, so runs of a few hundred change events share
     * one LSN; small batches end inside such runs. A SIGKILL after some of the rows are applied, then a restart:
     * each row is there exactly once, at the transaction's commit time.
     */
    @Test
    void sigkillInsideOneLargeCopyKeepsEveryRowExactlyOnce() throws Exception {
        int rows = 30_000;
        db.exec("CREATE TABLE public.bulk (id int PRIMARY KEY, v int NOT NULL)");
        Path propsFile = dir.resolve("bulk.properties");
        Path stopFile = dir.resolve("bulk-stop");
        Properties p = new Properties();
        db.props("bulk", "bulk_slot", dir.resolve("store"), "public.bulk").forEach((k, v) -> p.setProperty(k, v.toString()));
        // Batches far smaller than a page's worth of rows, so batch ends fall inside same-LSN runs.
        p.setProperty(ReplicaConfig.DEBEZIUM_PREFIX + "max.batch.size", "97");
        try (OutputStream out = Files.newOutputStream(propsFile)) {
            p.store(out, null);
        }
        Process first = startReplicaJvm(propsFile, stopFile, dir.resolve("bulk-first.log"), "public.bulk", Integer.toString(rows / 4));
        Process second = null;
        long committedAt;
        try {
            awaitLine(first, dir.resolve("bulk-first.log"), "STARTED", 90);
            committedAt = db.copy("public.bulk", "id, v", () -> java.util.stream.IntStream.rangeClosed(1, rows)
                    .mapToObj(i -> i + "," + (i * 7)).iterator());
            awaitLine(first, dir.resolve("bulk-first.log"), "KEY_APPLIED", 120);
            first.destroyForcibly();
            assertThat(first.waitFor(30, TimeUnit.SECONDS)).isTrue();
            second = startReplicaJvm(propsFile, stopFile, dir.resolve("bulk-second.log"));
            Files.writeString(stopFile, Long.toString(committedAt));
            awaitLine(second, dir.resolve("bulk-second.log"), "STOPPED", 180);
            assertThat(second.waitFor(30, TimeUnit.SECONDS)).as("second replica JVM stops").isTrue();
            String secondLog = Files.readString(dir.resolve("bulk-second.log"));
            assertThat(second.exitValue()).as(secondLog).isZero();
            assertThat(secondLog).as("the second JVM resumes the store").contains("open: REOPENED").doesNotContain("REBUILT");
        } finally {
            first.destroyForcibly();
            if (second != null) {
                second.destroyForcibly();
            }
        }
        Map<Integer, Integer> inDb = new HashMap<>();
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SELECT id, v FROM public.bulk")) {
            while (rs.next()) {
                inDb.put(rs.getInt(1), rs.getInt(2));
            }
        }
        assertThat(inDb).hasSize(rows);
        try (MapDbVersionStore store = MapDbVersionStore.open(dir.resolve("store").resolve("bulk.mapdb"), StoreOptions.defaults())) {
            List<Integer> missing = new ArrayList<>();
            List<Integer> doubled = new ArrayList<>();
            for (Map.Entry<Integer, Integer> e : inDb.entrySet()) {
                List<Version> history = store.history("public.bulk", RowKey.of(e.getKey()));
                if (history.isEmpty()) {
                    missing.add(e.getKey());
                } else if (history.size() > 1) {
                    doubled.add(e.getKey());
                } else {
                    assertThat(history.get(0).validFrom()).as("key %d", e.getKey()).isEqualTo(committedAt);
                    assertThat(history.get(0).row().getInt32("v")).as("key %d", e.getKey()).isEqualTo(e.getValue());
                }
            }
            assertThat(missing.size()).as("rows of the COPY missing from the replica, first of them: %s",
                    missing.stream().sorted().limit(10).toList()).isZero();
            assertThat(doubled.size()).as("rows of the COPY with more than one version, first of them: %s",
                    doubled.stream().sorted().limit(10).toList()).isZero();
            int keys = 0;
            for (RowKey ignored : store.keys("public.bulk")) {
                keys++;
            }
            assertThat(keys).isEqualTo(rows);
        }
    }

    private static long appliedCount(String line) {
        return Long.parseLong(line.substring("APPLIED ".length()).trim());
    }

    /**
     * How many versions of {@code table} the killed replica's store holds, read from a copy of its files (opening
     * the files themselves would truncate a torn journal tail and write a checkpoint, and the restart is to find
     * them as the kill left them).
     */
    private long versionsKeptAfterKill(String name, String table) throws IOException {
        Path copy = dir.resolve("store-at-kill");
        Files.createDirectories(copy);
        try (Stream<Path> files = Files.list(dir.resolve("store"))) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                Files.copy(f, copy.resolve(f.getFileName()));
            }
        }
        try (MapDbVersionStore store = MapDbVersionStore.open(copy.resolve(name + ".mapdb"), StoreOptions.defaults())) {
            assertThat(store.openOutcome().kind()).as("the killed replica's store opens as it was left")
                    .isEqualTo(OpenOutcome.Kind.REOPENED);
            long kept = 0;
            for (int id = 1; id <= KEYS; id++) {
                kept += store.history(table, RowKey.of(id)).size();
            }
            assertThat(kept).as("the snapshot was committed").isGreaterThanOrEqualTo(KEYS);
            return kept;
        }
    }

    private static void write(String table, int keys, List<Committed> committed, AtomicBoolean writing) {
        Random rnd = new Random(7);
        int seq = 0;
        while (writing.get()) {
            seq++;
            // Mostly single-row transactions, some touching many rows at once.
            int n = rnd.nextInt(10) == 0 ? 1 + rnd.nextInt(Math.min(keys, 30)) : 1;
            List<Integer> ids = new ArrayList<>();
            while (ids.size() < n) {
                int id = 1 + rnd.nextInt(keys);
                if (!ids.contains(id)) {
                    ids.add(id);
                }
            }
            String in = ids.stream().map(String::valueOf).reduce((a, b) -> a + "," + b).orElseThrow();
            long at = db.commit("UPDATE " + table + " SET seq = " + seq + " WHERE id IN (" + in + ")");
            synchronized (committed) {
                committed.add(new Committed(at, seq, ids));
            }
            pause(5);
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static Process startReplicaJvm(Path props, Path stop, Path log, String... progressTableAndKey) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                ReplicaProcessMain.class.getName(), props.toString(), stop.toString()));
        command.addAll(List.of(progressTableAndKey));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.redirectErrorStream(true);
        pb.redirectOutput(log.toFile());
        return pb.start();
    }

    private static void awaitLine(Process p, Path log, String line, int seconds) throws Exception {
        awaitLine(p, log, line::equals, line, seconds);
    }

    private static void awaitLine(Process p, Path log, Predicate<String> match, String line, int seconds) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            if (Files.exists(log)) {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(Files.newInputStream(log), StandardCharsets.UTF_8))) {
                    if (r.lines().anyMatch(match)) {
                        return;
                    }
                }
            }
            if (!p.isAlive()) {
                throw new AssertionError("replica JVM exited with " + p.exitValue() + ": " + Files.readString(log));
            }
            pause(100);
        }
        throw new AssertionError("replica JVM did not print " + line + " within " + seconds + " s: " + Files.readString(log));
    }
}
