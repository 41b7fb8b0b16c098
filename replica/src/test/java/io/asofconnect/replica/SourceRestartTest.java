package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * FAULTS 11: the source server is killed while the replica streams, or stopped while it takes its initial
 * snapshot, and started again on the same data directory and port, with writers committing throughout. The replica retries on
 * its own and its history equals what the database committed, by commit time: nothing missing, nothing doubled.
 * Commits are durable (fsync, synchronous_commit), and a commit whose answer was lost in the stop is resolved
 * by its transaction id afterwards.
 */
class SourceRestartTest {
    private static SourceDb db;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDb() {
        db = SourceDb.start("logical", Map.of("fsync", "on", "synchronous_commit", "on"));
    }

    @AfterAll
    static void stopDb() {
        if (db != null) {
            db.close();
        }
    }

    /** One transaction that set {@code ids} to {@code seq}; {@code xid} resolves one whose commit answer was lost. */
    private record Tx(String xid, int seq, List<Integer> ids) {
    }

    @Test
    void serverRestartWhileStreamingConvergesWithoutGapOrDuplicate() throws Exception {
        int keys = 20;
        db.exec("CREATE TABLE public.streamed (id int PRIMARY KEY, seq int NOT NULL)",
                "INSERT INTO public.streamed SELECT g, 0 FROM generate_series(1, " + keys + ") g");
        try (ReplicaHandle h = ReplicaRegistry.acquire(db.props("streamed", "streamed_slot", dir, "public.streamed"))) {
            ReplicaCaptureTest.catchUp(h);
            Writer writer = new Writer("public.streamed", keys);
            CompletableFuture<Void> writing = CompletableFuture.runAsync(writer);
            writer.awaitCommits(100);
            // A fast shutdown waits for a logical walsender until its client confirms the shutdown checkpoint,
            // which a client confirming only what it committed never does: the server is killed instead.
            db.crash();
            db.startAgain();
            writer.awaitCommits(writer.commits() + 100);
            writer.stop();
            writing.get(60, TimeUnit.SECONDS);
            ReplicaCaptureTest.catchUp(h);
            assertThat(writer.failures()).as("the writer saw the server go away").isPositive();
            Map<Integer, List<String>> expected = writer.expected();
            for (int id = 1; id <= keys; id++) {
                List<Version> history = h.replica().store().history("public.streamed", RowKey.of(id));
                assertThat(history.get(0).validFrom()).isEqualTo(Version.BEGINNING_OF_TIME);
                List<String> actual = history.subList(1, history.size()).stream()
                        .map(v -> v.validFrom() + "=" + v.row().getInt32("seq")).toList();
                assertThat(actual).as("history of key %d", id).containsExactlyElementsOf(expected.getOrDefault(id, List.of()));
            }
            assertThat(h.health().state()).isEqualTo(ReplicaHealth.State.RUNNING);
        }
    }

    @Test
    void serverRestartDuringTheInitialSnapshotConverges() throws Exception {
        int rows = 20_000;
        int hot = 200;
        db.exec("CREATE TABLE public.snapped (id int PRIMARY KEY, seq int NOT NULL, pad text)",
                "INSERT INTO public.snapped SELECT g, 0, repeat('x', 40) FROM generate_series(1, " + rows + ") g");
        Map<String, Object> props = db.props("snapped", "snapped_slot", dir, "public.snapped");
        props.put(ReplicaConfig.DEBEZIUM_PREFIX + "max.batch.size", "256");
        Writer writer = new Writer("public.snapped", hot);
        CompletableFuture<Void> writing = CompletableFuture.runAsync(writer);
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(2))
                    .until(() -> h.replica().snapshotRecordsApplied() > 1000);
            assertThat(h.watermark().get()).as("the snapshot is not through when the server stops").isEqualTo(Long.MIN_VALUE);
            db.stop();
            db.startAgain();
            writer.awaitCommits(writer.commits() + 50);
            assertThat(h.watermark().await(System.currentTimeMillis(), Duration.ofSeconds(180)))
                    .as("caught up after the restart (health %s)", h.health()).isTrue();
            writer.stop();
            writing.get(60, TimeUnit.SECONDS);
            ReplicaCaptureTest.catchUp(h);

            Map<Integer, Integer> inDb = new HashMap<>();
            try (Connection c = db.connect(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT id, seq FROM public.snapped")) {
                while (rs.next()) {
                    inDb.put(rs.getInt(1), rs.getInt(2));
                }
            }
            Map<Integer, List<String>> expected = writer.expected();
            long start = h.historyStart();
            assertThat(start).as("the snapshot was taken again: history starts after it").isGreaterThan(Long.MIN_VALUE)
                    .isLessThanOrEqualTo(h.watermark().get());
            for (int id = 1; id <= rows; id++) {
                List<Version> history = h.replica().store().history("public.snapped", RowKey.of(id));
                assertThat(history).as("key %d", id).isNotEmpty();
                assertThat(history.get(history.size() - 1).row().getInt32("seq")).as("latest of key %d", id).isEqualTo(inDb.get(id));
                List<String> streamed = history.stream().filter(v -> v.validFrom() >= start)
                        .map(v -> v.validFrom() + "=" + v.row().getInt32("seq")).toList();
                List<String> committedSinceStart = expected.getOrDefault(id, List.of()).stream()
                        .filter(e -> Long.parseLong(e.substring(0, e.indexOf('='))) >= start).toList();
                assertThat(streamed).as("history of key %d since %d", id, start).containsExactlyElementsOf(committedSinceStart);
            }
        } finally {
            writer.stop();
        }
    }

    /**
     * Commits small updates until stopped, through server restarts: a statement that fails because the server is
     * gone is retried on a new connection; a commit whose answer was lost is kept by xid and resolved at the end.
     */
    private static final class Writer implements Runnable {
        private final String table;
        private final int keys;
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final List<Tx> committed = new ArrayList<>();
        private final List<Tx> unknown = new ArrayList<>();
        private int failures;

        Writer(String table, int keys) {
            this.table = table;
            this.keys = keys;
        }

        @Override
        public void run() {
            Random rnd = new Random(11);
            int seq = 0;
            while (running.get()) {
                seq++;
                int n = rnd.nextInt(10) == 0 ? 1 + rnd.nextInt(Math.min(keys, 10)) : 1;
                List<Integer> ids = new ArrayList<>();
                while (ids.size() < n) {
                    int id = 1 + rnd.nextInt(keys);
                    if (!ids.contains(id)) {
                        ids.add(id);
                    }
                }
                String xid = null;
                try (Connection c = db.connect()) {
                    c.setAutoCommit(false);
                    try (PreparedStatement ps = c.prepareStatement("UPDATE " + table + " SET seq = ? WHERE id = ANY (?)")) {
                        ps.setInt(1, seq);
                        ps.setArray(2, c.createArrayOf("int4", ids.toArray()));
                        ps.executeUpdate();
                    }
                    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_current_xact_id()::text")) {
                        rs.next();
                        xid = rs.getString(1);
                    }
                    c.commit();
                    synchronized (this) {
                        committed.add(new Tx(xid, seq, ids));
                        notifyAll();
                    }
                } catch (SQLException | RuntimeException e) {
                    synchronized (this) {
                        failures++;
                        if (xid != null) {
                            unknown.add(new Tx(xid, seq, ids));
                        }
                    }
                    pause(50);
                }
                pause(3);
            }
        }

        synchronized int commits() {
            return committed.size();
        }

        synchronized int failures() {
            return failures;
        }

        synchronized void awaitCommits(int n) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (committed.size() < n) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left <= 0) {
                    throw new AssertionError("the writer committed " + committed.size() + " transactions, not " + n + ", within 120 s");
                }
                wait(left);
            }
        }

        void stop() {
            running.set(false);
        }

        /** Per key, "commitMillis=seq" of every committed transaction in commit order, lost answers resolved. */
        Map<Integer, List<String>> expected() throws SQLException {
            List<Tx> all;
            synchronized (this) {
                all = new ArrayList<>(committed);
                all.addAll(unknown);
            }
            record At(long seq, long millis, Tx tx) {
            }
            List<At> done = new ArrayList<>();
            try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement(
                    "SELECT pg_xact_status(?::xid8), floor(extract(epoch from pg_xact_commit_timestamp(?::xid)) * 1000)::bigint")) {
                for (Tx t : all) {
                    ps.setString(1, t.xid());
                    ps.setString(2, t.xid());
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        if ("committed".equals(rs.getString(1))) {
                            done.add(new At(t.seq(), rs.getLong(2), t));
                        }
                    }
                }
            }
            // One writer, one transaction at a time: seq order is commit order.
            done.sort(java.util.Comparator.comparingLong(At::seq));
            Map<Integer, List<String>> expected = new HashMap<>();
            for (At a : done) {
                for (int id : a.tx().ids()) {
                    expected.computeIfAbsent(id, k -> new ArrayList<>()).add(a.millis() + "=" + a.tx().seq());
                }
            }
            return expected;
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
}
