package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;
import org.apache.kafka.connect.data.Struct;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/** Snapshot, streaming and as-of answers of a real replica against what the database committed. */
class ReplicaCaptureTest {
    private static SourceDb db;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDb() {
        db = SourceDb.start("logical");
    }

    @AfterAll
    static void stopDb() {
        if (db != null) {
            db.close();
        }
    }

    /** Each test creates its own slot; dropping them keeps the server's max_replication_slots from running out. */
    @AfterEach
    void dropSlots() {
        db.dropIdleSlots();
    }

    /** Waits until the replica has applied everything committed up to now. */
    static void catchUp(ReplicaHandle h) throws InterruptedException {
        long now = System.currentTimeMillis();
        assertThat(h.watermark().await(now, Duration.ofSeconds(60)))
                .as("watermark reaches %d (health %s)", now, h.health()).isTrue();
    }

    /**
     * {@link #catchUp}, asking for {@code key} at the watermark all along: after a rebuild, every watermark that
     * moved past {@code before} (the watermark when the rebuild began) must answer, never OutOfHistory, since the
     * history start of a rebuilt store must never lie above the watermark (a time between the two would be
     * neither answerable nor ever answerable, and a reader would take it for pruned history). Keeps asking for
     * two probe intervals past catching up, so a history start set late is seen too.
     */
    static void catchUpAnsweringAtEveryWatermark(ReplicaHandle h, String table, RowKey key, long before) throws InterruptedException {
        long until = System.currentTimeMillis() + 2_500;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        int answered = 0;
        while (h.watermark().get() < until) {
            assertThat(System.nanoTime()).as("watermark reaches %d (health %s)", until, h.health()).isLessThan(deadline);
            long w = h.watermark().get();
            LookupResult r = h.asOf(table, key, w);
            if (w > before) {
                assertThat(r).as("lookup at the watermark %d (history start %d)", w, h.historyStart())
                        .isNotInstanceOf(LookupResult.OutOfHistory.class);
                answered++;
            }
            Thread.sleep(5);
        }
        assertThat(answered).as("lookups at a watermark past the rebuild").isPositive();
    }

    @Test
    void snapshotThenStreamingAnswersAsOfLikeTheDatabase() throws Exception {
        db.exec("CREATE TABLE public.dim (id int PRIMARY KEY, val text NOT NULL)",
                "INSERT INTO public.dim SELECT g, 'initial-' || g FROM generate_series(1, 20) g");
        // The oracle: per key, commit millis -> value (null = absent), in commit order.
        Map<Integer, TreeMap<Long, String>> oracle = new HashMap<>();
        for (int i = 1; i <= 20; i++) {
            oracle.computeIfAbsent(i, k -> new TreeMap<>()).put(Long.MIN_VALUE, "initial-" + i);
        }
        try (ReplicaHandle h = ReplicaRegistry.acquire(db.props("basic", "basic_slot", dir, "public.dim"))) {
            catchUp(h);
            assertThat(h.historyStart()).isEqualTo(Long.MIN_VALUE);
            assertThat(h.asOf("public.dim", RowKey.of(5), 0L)).isInstanceOf(LookupResult.Found.class);

            Random rnd = new Random(42);
            long first = Long.MAX_VALUE;
            for (int tx = 0; tx < 60; tx++) {
                int id = 1 + rnd.nextInt(30);
                String val = "v" + tx;
                int kind = rnd.nextInt(10);
                long committed;
                String now;
                if (kind < 2) {
                    committed = db.commit("DELETE FROM public.dim WHERE id = " + id);
                    now = null;
                } else {
                    committed = db.commit("INSERT INTO public.dim VALUES (" + id + ", '" + val + "')"
                            + " ON CONFLICT (id) DO UPDATE SET val = excluded.val");
                    now = val;
                }
                first = Math.min(first, committed);
                // Two commits in one millisecond: the later wins, as it does in the replica (by position).
                oracle.computeIfAbsent(id, k -> new TreeMap<>()).put(committed, now);
                if (tx % 7 == 0) {
                    Thread.sleep(3);
                }
            }
            catchUp(h);
            long last = h.watermark().get();
            List<Long> times = new ArrayList<>();
            for (long t = first - 5; t <= last; t++) {
                times.add(t);
            }
            int checked = 0;
            for (Map.Entry<Integer, TreeMap<Long, String>> e : oracle.entrySet()) {
                for (long t : times) {
                    Map.Entry<Long, String> expected = e.getValue().floorEntry(t);
                    LookupResult r = h.asOf("public.dim", RowKey.of(e.getKey()), t);
                    String expectedVal = expected == null ? null : expected.getValue();
                    if (expectedVal == null) {
                        assertThat(r).as("key %d at %d", e.getKey(), t).isInstanceOf(LookupResult.Absent.class);
                    } else {
                        assertThat(r).as("key %d at %d", e.getKey(), t).isInstanceOf(LookupResult.Found.class);
                        assertThat(((LookupResult.Found) r).version().row().getString("val")).as("key %d at %d", e.getKey(), t)
                                .isEqualTo(expectedVal);
                    }
                    checked++;
                }
            }
            assertThat(checked).isGreaterThan(1000);
            assertThat(h.asOf("public.dim", RowKey.of(1), System.currentTimeMillis() + 60_000))
                    .isInstanceOf(LookupResult.NotYetVisible.class);
        }
        assertThat(ReplicaRegistry.references("basic")).isZero();
    }

    private static Struct row(LookupResult r) {
        assertThat(r).isInstanceOf(LookupResult.Found.class);
        return ((LookupResult.Found) r).version().row();
    }

    @Test
    void commonTypesRoundTripAndCompositeKeys() throws Exception {
        db.exec("CREATE TABLE public.typed (region text, id bigint, i2 smallint, i4 int, f4 real, f8 double precision,"
                + " num numeric(20,6), num_free numeric, txt text, flag boolean, d date, ts timestamp, tstz timestamptz, u uuid,"
                + " j json, jb jsonb, b bytea, arr int[], tarr text[], nothing text, PRIMARY KEY (region, id))");
        try (ReplicaHandle h = ReplicaRegistry.acquire(db.props("typed", "typed_slot", dir, "public.typed"))) {
            catchUp(h);
            db.exec("INSERT INTO public.typed VALUES ('eu-ö', 9000000000, 7, -42, 1.5, 2.25, 12345678901234.123456, 0.1000,"
                    + " 'grüße – 日本語 \u00e9', true, '2024-02-29', '2024-02-29 13:14:15.123456', '2024-02-29 13:14:15.654321+02',"
                    + " 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '{\"a\": 1}', '{\"b\": [1, 2]}', '\\x00ff10', '{1,2,NULL}',"
                    + " '{x,\"y z\"}', NULL)");
            catchUp(h);
            Struct r = row(h.current("public.typed", RowKey.of("eu-ö", 9000000000L)));
            assertThat(r.getInt16("i2")).isEqualTo((short) 7);
            assertThat(r.getInt32("i4")).isEqualTo(-42);
            assertThat(r.getFloat32("f4")).isEqualTo(1.5f);
            assertThat(r.getFloat64("f8")).isEqualTo(2.25);
            assertThat((java.math.BigDecimal) r.get("num")).isEqualTo(new java.math.BigDecimal("12345678901234.123456"));
            // An unconstrained numeric arrives as Debezium's VariableScaleDecimal (scale + unscaled bytes): still exact.
            Struct free = r.getStruct("num_free");
            assertThat(new java.math.BigDecimal(new java.math.BigInteger(free.getBytes("value")), free.getInt32("scale")))
                    .isEqualByComparingTo("0.1");
            assertThat(r.getString("txt")).isEqualTo("grüße – 日本語 é");
            assertThat(r.getBoolean("flag")).isTrue();
            assertThat(r.getInt32("d")).isEqualTo((int) java.time.LocalDate.of(2024, 2, 29).toEpochDay());
            assertThat(r.getInt64("ts")).isEqualTo(java.time.LocalDateTime.of(2024, 2, 29, 13, 14, 15, 123456000)
                    .toEpochSecond(java.time.ZoneOffset.UTC) * 1_000_000 + 123456);
            assertThat(java.time.OffsetDateTime.parse(r.getString("tstz")).toInstant())
                    .isEqualTo(java.time.OffsetDateTime.parse("2024-02-29T13:14:15.654321+02:00").toInstant());
            assertThat(r.getString("u")).isEqualTo("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
            assertThat(r.getString("j")).isEqualTo("{\"a\": 1}");
            assertThat(r.getString("jb")).isEqualTo("{\"b\": [1, 2]}");
            Object b = r.get("b");
            byte[] bytes = b instanceof java.nio.ByteBuffer bb ? java.util.Arrays.copyOfRange(bb.array(), bb.position(), bb.limit()) : (byte[]) b;
            assertThat(bytes).containsExactly(0x00, 0xff, 0x10);
            assertThat(r.getArray("arr")).containsExactly(1, 2, null);
            assertThat(r.getArray("tarr")).containsExactly("x", "y z");
            assertThat(r.get("nothing")).isNull();
            // The composite key is (region, id), in key-column order; a differently typed id finds the same row.
            assertThat(h.current("public.typed", RowKey.of("eu-ö", new java.math.BigDecimal("9000000000"))))
                    .isInstanceOf(LookupResult.Found.class);
            assertThat(h.current("public.typed", RowKey.of("eu-o", 9000000000L))).isInstanceOf(LookupResult.Absent.class);
        }
    }

    /** Keys in the canonical forms the transform uses: a date as ISO text, a uuid in any case. */
    @Test
    void dateAndUuidKeysAreFoundByTheirCanonicalForms() throws Exception {
        db.exec("CREATE TABLE public.by_day (day date PRIMARY KEY, v text)", "INSERT INTO public.by_day VALUES ('2024-01-02', 'snap')",
                "CREATE TABLE public.by_uuid (u uuid PRIMARY KEY, v text)",
                "INSERT INTO public.by_uuid VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'snap')");
        try (ReplicaHandle h = ReplicaRegistry.acquire(db.props("canon", "canon_slot", dir, "public.by_day,public.by_uuid"))) {
            catchUp(h);
            String upper = "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11";
            assertThat(row(h.current("public.by_day", RowKey.of("2024-01-02"))).getString("v")).isEqualTo("snap");
            assertThat(row(h.current("public.by_uuid", RowKey.of(upper))).getString("v")).isEqualTo("snap");
            db.exec("INSERT INTO public.by_day VALUES ('2024-03-04', 'streamed')",
                    "UPDATE public.by_uuid SET v = 'streamed' WHERE u = '" + upper + "'");
            catchUp(h);
            assertThat(row(h.current("public.by_day", RowKey.of("2024-03-04"))).getString("v")).isEqualTo("streamed");
            assertThat(row(h.current("public.by_uuid", RowKey.of(upper))).getString("v")).isEqualTo("streamed");
            assertThat(row(h.current("public.by_uuid", RowKey.of(java.util.UUID.fromString(upper)))).getString("v")).isEqualTo("streamed");
            // The day number Debezium sends is not the key: only the canonical form is.
            assertThat(h.current("public.by_day", RowKey.of((int) java.time.LocalDate.of(2024, 1, 2).toEpochDay())))
                    .isInstanceOf(LookupResult.Absent.class);
        }
    }

    @Test
    void schemaChangesKeepOldVersionsInTheirOldShape() throws Exception {
        db.exec("CREATE TABLE public.evolving (id int PRIMARY KEY, a text, gone text)",
                "INSERT INTO public.evolving VALUES (1, 'a0', 'g0')");
        try (ReplicaHandle h = ReplicaRegistry.acquire(db.props("evolving", "evolving_slot", dir, "public.evolving"))) {
            catchUp(h);
            long t1 = db.commit("UPDATE public.evolving SET a = 'a1' WHERE id = 1");
            long t2 = db.commit("ALTER TABLE public.evolving ADD COLUMN added int", "UPDATE public.evolving SET added = 5 WHERE id = 1");
            long t3 = db.commit("ALTER TABLE public.evolving DROP COLUMN gone", "UPDATE public.evolving SET a = 'a3' WHERE id = 1");
            catchUp(h);
            Struct v1 = row(h.asOf("public.evolving", RowKey.of(1), t1));
            assertThat(v1.getString("a")).isEqualTo("a1");
            assertThat(v1.schema().field("added")).isNull();
            assertThat(v1.getString("gone")).isEqualTo("g0");
            Struct v2 = row(h.asOf("public.evolving", RowKey.of(1), t2));
            assertThat(v2.getInt32("added")).isEqualTo(5);
            assertThat(v2.getString("gone")).isEqualTo("g0");
            Struct v3 = row(h.asOf("public.evolving", RowKey.of(1), t3));
            assertThat(v3.schema().field("gone")).isNull();
            assertThat(v3.getString("a")).isEqualTo("a3");
            assertThat(v3.getInt32("added")).isEqualTo(5);
            assertThat(row(h.asOf("public.evolving", RowKey.of(1), t1 - 1)).getString("a")).isEqualTo("a0");
        }
    }

    @Test
    void restartResumesFromTheStoreWithoutASecondSnapshot() throws Exception {
        db.exec("CREATE TABLE public.resume (id int PRIMARY KEY, v int)",
                "INSERT INTO public.resume SELECT g, 0 FROM generate_series(1, 50) g");
        Map<String, Object> props = db.props("resume", "resume_slot", dir, "public.resume");
        List<Version> before;
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            catchUp(h);
            assertThat(h.replica().snapshotRecordsApplied()).isEqualTo(50);
            db.commit("UPDATE public.resume SET v = 1 WHERE id = 7");
            catchUp(h);
            before = h.replica().store().history("public.resume", RowKey.of(7));
            assertThat(before).hasSize(2);
        }
        String flushedAfterFirstRun = db.queryString("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'resume_slot'");
        long whileStopped = db.commit("UPDATE public.resume SET v = 2 WHERE id = 7");
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            catchUp(h);
            assertThat(h.replica().snapshotRecordsApplied()).as("no second snapshot").isZero();
            List<Version> after = h.replica().store().history("public.resume", RowKey.of(7));
            assertThat(after).hasSize(3);
            assertThat(after.subList(0, 2)).extracting(Version::id).isEqualTo(before.stream().map(Version::id).toList());
            assertThat(after.get(2).validFrom()).isEqualTo(whileStopped);
            assertThat(after.get(2).row().getInt32("v")).isEqualTo(2);
            // The server's slot moves on once our commit is through (the engine confirms after its offset flush).
            String flushedNow = db.queryString("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'resume_slot'");
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> io.asofconnect.replica.capture.StartupChecks.parseLsn(
                    db.queryString("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'resume_slot'"))
                    > io.asofconnect.replica.capture.StartupChecks.parseLsn(flushedAfterFirstRun));
            assertThat(flushedNow).isNotNull();
        }
    }

    @Test
    void watermarkAdvancesWhileTablesAreIdleAndTheSlotKeepsUpAndLetsGoOfWal() throws Exception {
        db.exec("CREATE TABLE public.idle (id int PRIMARY KEY)", "CREATE TABLE public.busy_other (id serial PRIMARY KEY, x int)");
        try (ReplicaHandle h = ReplicaRegistry.acquire(db.props("idle", "idle_slot", dir, "public.idle"))) {
            catchUp(h);
            long w1 = h.watermark().get();
            String lsn1 = db.queryString("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'idle_slot'");
            for (int i = 0; i < 20; i++) {
                db.exec("INSERT INTO public.busy_other (x) VALUES (" + i + ")");
            }
            long target = System.currentTimeMillis() + 500;
            assertThat(h.watermark().await(target, Duration.ofSeconds(30))).isTrue();
            assertThat(h.watermark().get()).isGreaterThan(w1);
            assertThat(h.watermark().await(Long.MAX_VALUE, Duration.ofMillis(300))).isFalse();
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> io.asofconnect.replica.capture.StartupChecks.parseLsn(
                    db.queryString("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'idle_slot'"))
                    > io.asofconnect.replica.capture.StartupChecks.parseLsn(lsn1));

            // FAULTS 17: the slot also lets go of the WAL the busy table wrote (restart_lsn follows), or the server's
            // disk fills while the captured tables sleep.
            String before = db.queryString("SELECT pg_current_wal_lsn()::text");
            db.exec("INSERT INTO public.busy_other (x) SELECT g FROM generate_series(1, 200000) g");
            long written = db.queryLong("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '" + before + "')::bigint");
            assertThat(written).as("WAL written by the busy table").isGreaterThan(8L << 20);
            // restart_lsn moves at the next running-transactions record, which the server logs every 15 s.
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500)).untilAsserted(() ->
                    assertThat(db.queryLong("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint FROM pg_replication_slots"
                            + " WHERE slot_name = 'idle_slot'")).as("WAL retained for the idle slot").isLessThan(1L << 20));
        }
    }

    @Test
    void tableWithoutPrimaryKeyUsesTheConfiguredKeyColumns() throws Exception {
        db.exec("CREATE TABLE public.nopk (code text NOT NULL, sub int NOT NULL, v text)",
                "ALTER TABLE public.nopk REPLICA IDENTITY FULL", "INSERT INTO public.nopk VALUES ('a', 1, 'x')");
        Map<String, Object> props = db.props("nopk", "nopk_slot", dir, "public.nopk");
        props.put(ReplicaConfig.KEY_COLUMNS, "public.nopk:code,sub");
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            catchUp(h);
            long t = db.commit("UPDATE public.nopk SET v = 'y' WHERE code = 'a'");
            long d = db.commit("DELETE FROM public.nopk WHERE code = 'a'");
            catchUp(h);
            assertThat(row(h.asOf("public.nopk", RowKey.of("a", 1), t)).getString("v")).isEqualTo("y");
            assertThat(h.asOf("public.nopk", RowKey.of("a", 1), d)).isInstanceOf(LookupResult.Absent.class);
        }
    }

    @Test
    void registrySharesByNameAndRejectsConflicts() throws Exception {
        db.exec("CREATE TABLE public.shared (id int PRIMARY KEY)");
        Map<String, Object> props = db.props("shared", "shared_slot", dir, "public.shared");
        try (ReplicaHandle a = ReplicaRegistry.acquire(props)) {
            try (ReplicaHandle b = ReplicaRegistry.acquire(Map.of(ReplicaConfig.NAME, "shared"));
                 ReplicaHandle c = ReplicaRegistry.acquire(new HashMap<>(props))) {
                assertThat(ReplicaRegistry.references("shared")).isEqualTo(3);
                assertThat(b.tables()).containsExactly("public.shared");
                assertThat(c.replicaName()).isEqualTo("shared");
            }
            assertThat(ReplicaRegistry.references("shared")).isEqualTo(1);

            Map<String, Object> different = new HashMap<>(props);
            different.put(ReplicaConfig.PASSWORD, "other-secret");
            different.put(ReplicaConfig.WATERMARK_INTERVAL_MS, "999");
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> ReplicaRegistry.acquire(different))
                    .isInstanceOf(org.apache.kafka.common.config.ConfigException.class)
                    .hasMessageContaining(ReplicaConfig.PASSWORD).hasMessageContaining(ReplicaConfig.WATERMARK_INTERVAL_MS)
                    .hasMessageNotContaining("other-secret").hasMessageNotContaining("unused");

            Map<String, Object> sameSlot = db.props("shared2", "shared_slot", dir, "public.shared");
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> ReplicaRegistry.acquire(sameSlot))
                    .isInstanceOf(org.apache.kafka.common.config.ConfigException.class)
                    .hasMessageContaining("shared_slot").hasMessageContaining("cannot share a slot");
            assertThat(a.health().state()).isIn(ReplicaHealth.State.RUNNING, ReplicaHealth.State.STARTING);
        }
        assertThat(ReplicaRegistry.references("shared")).isZero();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ReplicaRegistry.acquire(Map.of(ReplicaConfig.NAME, "shared")))
                .isInstanceOf(org.apache.kafka.common.config.ConfigException.class).hasMessageContaining("no replica of this name");
    }

    /** Connect restarts a task after a config update: the new task acquires while the old one's close still runs. */
    @Test
    void acquireWhileTheLastReleaseIsStillClosingWaitsForItAndStarts() throws Exception {
        db.exec("CREATE TABLE public.reacquired (id int PRIMARY KEY, v text)", "INSERT INTO public.reacquired VALUES (1, 'a')");
        Map<String, Object> props = db.props("reacquired", "reacquired_slot", dir, "public.reacquired");
        ReplicaHandle first = ReplicaRegistry.acquire(props);
        catchUp(first);
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            java.util.concurrent.Future<?> closing = pool.submit(first::close);
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(1))
                    .until(() -> ReplicaRegistry.isClosing("reacquired") || closing.isDone());
            assertThat(closing.isDone()).as("the close of the first replica is still running when the second acquire starts").isFalse();
            try (ReplicaHandle second = ReplicaRegistry.acquire(new HashMap<>(props))) {
                assertThat(closing.isDone()).as("the acquire waited for the close").isTrue();
                closing.get(1, java.util.concurrent.TimeUnit.SECONDS);
                assertThat(second.replica()).isNotSameAs(first.replica());
                assertThat(ReplicaRegistry.references("reacquired")).isEqualTo(1);
                db.commit("UPDATE public.reacquired SET v = 'b' WHERE id = 1");
                catchUp(second);
                assertThat(row(second.current("public.reacquired", RowKey.of(1))).getString("v")).isEqualTo("b");
                // The first replica's offset-store binding is gone, the second's is in place.
                assertThat(ReplicaRegistry.engineReplica("reacquired")).isSameAs(second.replica());
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(ReplicaRegistry.references("reacquired")).isZero();
    }

    @Test
    void retentionPrunesOldVersions() throws Exception {
        db.exec("CREATE TABLE public.pruned (id int PRIMARY KEY, v int)", "INSERT INTO public.pruned VALUES (1, 0)");
        Map<String, Object> props = db.props("pruned", "pruned_slot", dir, "public.pruned");
        props.put(ReplicaConfig.HISTORY_RETENTION_MS, "1500");
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            catchUp(h);
            long old = db.commit("UPDATE public.pruned SET v = 1 WHERE id = 1");
            db.commit("UPDATE public.pruned SET v = 2 WHERE id = 1");
            catchUp(h);
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> h.historyStart() > old);
            assertThat(h.asOf("public.pruned", RowKey.of(1), old)).isInstanceOf(LookupResult.OutOfHistory.class);
            long kept = h.historyStart();
            assertThat(row(h.asOf("public.pruned", RowKey.of(1), Math.max(kept, h.watermark().get()))).getInt32("v")).isEqualTo(2);
            assertThat(h.replica().store().history("public.pruned", RowKey.of(1)).size()).isLessThanOrEqualTo(2);
        }
    }

    @Test
    void terminatedWalsenderIsRetriedAndNothingIsLostOrDoubled() throws Exception {
        db.exec("CREATE TABLE public.bounce (id int PRIMARY KEY, v int)", "INSERT INTO public.bounce VALUES (1, 0)");
        try (ReplicaHandle h = ReplicaRegistry.acquire(db.props("bounce", "bounce_slot", dir, "public.bounce"))) {
            catchUp(h);
            List<Long> commits = new ArrayList<>();
            for (int round = 1; round <= 3; round++) {
                commits.add(db.commit("UPDATE public.bounce SET v = " + round + " WHERE id = 1"));
                db.exec("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'bounce_slot' AND active");
                commits.add(db.commit("UPDATE public.bounce SET v = " + (round * 10) + " WHERE id = 1"));
            }
            catchUp(h);
            List<Version> history = h.replica().store().history("public.bounce", RowKey.of(1));
            assertThat(history.subList(1, history.size())).extracting(Version::validFrom).containsExactlyElementsOf(commits);
            assertThat(history.get(history.size() - 1).row().getInt32("v")).isEqualTo(30);
        }
    }

    @Test
    void slotDroppedWhileRunningIsReportedAsAGapNotSkipped() throws Exception {
        db.exec("CREATE TABLE public.dropped (id int PRIMARY KEY)");
        try (ReplicaHandle h = ReplicaRegistry.acquire(db.props("dropped", "dropped_slot", dir, "public.dropped"))) {
            catchUp(h);
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() -> {
                db.exec("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'dropped_slot' AND active");
                try {
                    db.exec("SELECT pg_drop_replication_slot('dropped_slot')");
                    return true;
                } catch (IllegalStateException stillActive) {
                    return false;
                }
            });
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60))
                    .until(() -> h.health().state() == ReplicaHealth.State.FAILED);
            assertThat(h.failure()).get().extracting(Throwable::getMessage).asString()
                    .contains("no longer exists").contains(ReplicaConfig.ON_GAP);
            assertThat(h.health().detail()).contains(ReplicaConfig.ON_GAP);
        }
    }

    @Test
    void validFromColumnAndSnapshotTime() throws Exception {
        db.exec("CREATE TABLE public.effective (id int PRIMARY KEY, v text, eff timestamptz NOT NULL, eff_local timestamp)",
                "INSERT INTO public.effective VALUES (1, 'old', '2020-01-01 00:00:00+00', '2020-01-01 00:00:00')");
        Map<String, Object> props = db.props("effective", "effective_slot", dir, "public.effective");
        props.put(ReplicaConfig.VALID_FROM, "COLUMN");
        props.put(ReplicaConfig.VALID_FROM_COLUMN, "eff");
        props.put(ReplicaConfig.SNAPSHOT_VALID_FROM, "SNAPSHOT_TIME");
        long beforeStart = System.currentTimeMillis();
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            catchUp(h);
            List<Version> snap = h.replica().store().history("public.effective", RowKey.of(1));
            assertThat(snap).hasSize(1);
            assertThat(snap.get(0).validFrom()).as("snapshot rows are valid from the snapshot").isBetween(beforeStart - 5_000, h.watermark().get());
            assertThat(h.historyStart()).isGreaterThanOrEqualTo(snap.get(0).validFrom()).isLessThanOrEqualTo(h.watermark().get());
            assertThat(h.asOf("public.effective", RowKey.of(1), beforeStart - 60_000)).isInstanceOf(LookupResult.OutOfHistory.class);

            long future = h.watermark().get() + 2_000;
            db.exec("UPDATE public.effective SET v = 'new', eff = to_timestamp(" + future + " / 1000.0) WHERE id = 1");
            assertThat(h.watermark().await(future + 100, Duration.ofSeconds(30))).isTrue();
            List<Version> all = h.replica().store().history("public.effective", RowKey.of(1));
            assertThat(all).hasSize(2);
            assertThat(all.get(1).validFrom()).isEqualTo(future);
            assertThat(row(h.asOf("public.effective", RowKey.of(1), future - 1)).getString("v")).isEqualTo("old");
            assertThat(row(h.asOf("public.effective", RowKey.of(1), future)).getString("v")).isEqualTo("new");
        }
    }

    @Test
    void slotIsDroppedOnStopOnlyWhenAskedTo() throws Exception {
        db.exec("CREATE TABLE public.ephemeral (id int PRIMARY KEY)");
        Map<String, Object> props = db.props("ephemeral", "ephemeral_slot", dir, "public.ephemeral");
        props.put(ReplicaConfig.SLOT_DROP_ON_STOP, "true");
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            catchUp(h);
            assertThat(db.queryLong("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'ephemeral_slot'")).isEqualTo(1);
        }
        assertThat(db.queryLong("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'ephemeral_slot'")).isZero();
    }

    @Test
    void transactionOpenAcrossARestartAppearsOnceAndAbortedOnesNever() throws Exception {
        db.exec("CREATE TABLE public.pending (id int PRIMARY KEY, v text)");
        Map<String, Object> props = db.props("pending", "pending_slot", dir, "public.pending");
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            catchUp(h);
        }
        try (java.sql.Connection open = db.connect(); java.sql.Connection aborted = db.connect()) {
            open.setAutoCommit(false);
            aborted.setAutoCommit(false);
            try (var s = open.createStatement()) {
                s.execute("INSERT INTO public.pending VALUES (1, 'spans the restart')");
            }
            try (var s = aborted.createStatement()) {
                s.execute("INSERT INTO public.pending VALUES (2, 'never committed')");
            }
            try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
                catchUp(h);
                assertThat(h.current("public.pending", RowKey.of(1))).isInstanceOf(LookupResult.Absent.class);
            }
            open.commit();
            aborted.rollback();
        }
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            catchUp(h);
            assertThat(h.replica().store().history("public.pending", RowKey.of(1))).hasSize(1);
            assertThat(row(h.current("public.pending", RowKey.of(1))).getString("v")).isEqualTo("spans the restart");
            assertThat(h.replica().store().history("public.pending", RowKey.of(2))).isEmpty();
        }
    }
}
