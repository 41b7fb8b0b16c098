package io.asofconnect.bench;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.replica.ReplicaHandle;
import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.replica.ReplicaRegistry;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Restart against rebuild: with a replica of K keys × V versions on disk, the seconds from acquiring it again
 * (what a task start does) to the first enriched record, next to rebuilding that replica from a snapshot.
 * Both go through the real {@link ReplicaRegistry} → Replica → version store path on an embedded Postgres
 * ({@link BenchPostgres}).
 *
 * <p>Build (not timed): load K rows, snapshot them into the replica, then V - 1 rounds of updating every row,
 * each streamed into the replica, so that its store holds K × V versions; release it. Then R measured rounds
 * (an odd number, {@value #DEFAULT_ROUNDS} by default), each timing both sides:
 * <ol>
 *   <li>restart: acquire the same replica (same store, same slot) and wait until it can enrich a record that
 *       happened at that moment: its watermark passes the acquire time and the as-of lookup of a key at that
 *       time finds the row's last version (the transform holds a record until exactly that); release it;</li>
 *   <li>rebuild: acquire a replica of the same table with an empty store and a new slot, which takes a snapshot,
 *       and wait for the same condition; release it, which drops its slot, and delete its store, so that every
 *       round starts from the same state (one slot, the restarted replica's).</li>
 * </ol>
 * Order bias: the untimed build runs every path of both (snapshot, streaming, store) first, so both timed
 * phases start warm; and odd rounds restart first, even rounds rebuild first, so that neither side always meets
 * the page cache, the server's WAL or the machine's state as the other left it. Each side's figure is its
 * median over the rounds (odd, so the median is one measured round), printed with the spread (fastest and
 * slowest round): one round is one sample of a few seconds on a shared 2-core machine, where a single restart
 * took 1.06 s once and 2.7-3.2 s in three other runs of the same code. Prints
 * {@code bench restart-vs-rebuild ours=<median restart s> peer=<median rebuild s> ratio=<rebuild/restart>}.
 *
 * <p>Run: {@code java -cp benchmarks/target-bench/benchmarks.jar io.asofconnect.bench.ReplicaRestartBenchmark [K] [V] [R]}
 * (defaults 1000000, 10 and {@value #DEFAULT_ROUNDS}).
 */
public final class ReplicaRestartBenchmark {
    static final String TABLE = "public.products";
    /** Measured rounds by default: odd, so that each side's median is one measured round. */
    static final int DEFAULT_ROUNDS = 3;

    private ReplicaRestartBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int keys = args.length > 0 ? Integer.parseInt(args[0].replace("_", "")) : 1_000_000;
        int versions = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : DEFAULT_ROUNDS;
        if (versions < 1) {
            throw new IllegalArgumentException("versions must be at least 1, not " + versions);
        }
        if (rounds < 1 || rounds % 2 == 0) {
            throw new IllegalArgumentException("rounds must be odd and at least 1 (each side's median is then one measured round), not "
                    + rounds);
        }
        Duration timeout = Duration.ofSeconds(Math.max(300, keys / 200));
        System.out.printf("Replica restart vs rebuild: %,d keys x %d versions, %d measured round%s%n", keys, versions, rounds,
                rounds == 1 ? "" : "s");
        try (BenchPostgres pg = new BenchPostgres("replica-restart")) {
            pg.createAndLoad(TABLE, keys);
            Map<String, Object> props = pg.replicaProps("restart_replica", TABLE, pg.work().resolve("replica"));
            build(pg, props, keys, versions, timeout);

            List<Double> restarts = new ArrayList<>();
            List<Double> rebuilds = new ArrayList<>();
            for (int r = 1; r <= rounds; r++) {
                // Odd rounds restart first, even rounds rebuild first: neither side always runs right after the
                // build, or right after the other side's snapshot has filled the page cache and the WAL.
                boolean rebuildFirst = r % 2 == 0;
                System.out.printf("measured round %d of %d, %s first:%n", r, rounds, rebuildFirst ? "rebuild" : "restart");
                int round = r;
                Phase restart = () -> restart(pg, props, keys, versions, timeout);
                Phase rebuild = () -> rebuild(pg, round, keys, versions, timeout);
                if (rebuildFirst) {
                    rebuilds.add(rebuild.run());
                    restarts.add(restart.run());
                } else {
                    restarts.add(restart.run());
                    rebuilds.add(rebuild.run());
                }
            }
            double restart = median(restarts);
            double rebuild = median(rebuilds);

            System.out.println();
            System.out.printf("Replica of %,d keys x %d versions on disk, embedded Postgres, median of %d round%s (fastest-slowest):%n",
                    keys, versions, rounds, rounds == 1 ? "" : "s");
            System.out.printf("  restart (acquire -> first enriched record): %8.2f s   (%.2f-%.2f s)%n", restart,
                    Collections.min(restarts), Collections.max(restarts));
            System.out.printf("  rebuild from a snapshot (same condition):  %8.2f s   (%.2f-%.2f s)   rebuild / restart %.1f%n", rebuild,
                    Collections.min(rebuilds), Collections.max(rebuilds), rebuild / restart);
            BenchLine.duration("restart-vs-rebuild", restart, rebuild);
        }
    }

    /** A timed side of a round, in seconds. */
    private interface Phase {
        double run() throws Exception;
    }

    /** Of an odd count (main refuses an even one), the middle value. */
    static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }

    /** Acquires the built replica again (same store, same slot); @return seconds to the first enriched record */
    private static double restart(BenchPostgres pg, Map<String, Object> props, int keys, int versions, Duration timeout)
            throws Exception {
        // What restart time depends on besides the store: the WAL the server decodes again, at each of the
        // engine's two stream starts (one to find the resume position, one to stream from it). Read before each
        // restart, since every run of the replica moves its slot on.
        long redecode = pg.walToDecodeAgain(String.valueOf(props.get(ReplicaConfig.SLOT_NAME)));
        double secs = untilFirstEnriched(props, keys, versions, timeout);
        System.out.printf("  restart: %.2f s (slot's WAL from restart LSN to confirmed flush: %,d bytes)%n", secs, redecode);
        return secs;
    }

    /**
     * A replica of the same table with an empty store and a slot of its own, this round's; @return seconds to the
     * first enriched record. Its release drops the slot and its store is then deleted (neither timed): every round
     * then starts from the same state, one slot on the server (the restarted replica's) and one store on disk, and
     * the rounds are not bounded by the server's {@code max_replication_slots}.
     */
    private static double rebuild(BenchPostgres pg, int round, int keys, int versions, Duration timeout) throws Exception {
        String name = "rebuild_replica_" + round;
        Path dir = pg.work().resolve("rebuilt-" + round);
        Map<String, Object> fresh = new HashMap<>(pg.replicaProps(name, TABLE, dir));
        fresh.put(ReplicaConfig.SLOT_DROP_ON_STOP, "true");
        double secs = untilFirstEnriched(fresh, keys, versions, timeout);
        System.out.printf("  rebuild: %.2f s%n", secs);
        if (pg.walToDecodeAgain(String.valueOf(fresh.get(ReplicaConfig.SLOT_NAME))) != -1) {
            System.out.printf("  (the slot of %s was not dropped on release; it stays until the end of the run)%n", name);
        }
        deleteTree(dir);
        return secs;
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    /** Snapshot, then versions - 1 rounds of updates, each streamed in before the next; not timed. */
    private static void build(BenchPostgres pg, Map<String, Object> props, int keys, int versions, Duration timeout)
            throws Exception {
        long started = System.nanoTime();
        try (ReplicaHandle replica = ReplicaRegistry.acquire(props)) {
            awaitWatermark(replica, System.currentTimeMillis(), timeout);
            for (int v = 1; v < versions; v++) {
                pg.updateAll(TABLE, keys);
                awaitWatermark(replica, System.currentTimeMillis(), timeout);
            }
            // Every update streamed: the last key carries all of them (each change is one more version).
            requireLastVersion(replica.current(TABLE, RowKey.of((long) keys - 1)), keys - 1, versions, "after the build");
        }
        System.out.printf("  (built the replica, %,d versions, in %.1f s)%n", (long) keys * versions, (System.nanoTime() - started) / 1e9);
    }

    /**
     * @return seconds from acquiring the replica until a record stamped at the acquire time can be enriched:
     *     watermark past it and the last version of a key found as of it
     */
    private static double untilFirstEnriched(Map<String, Object> props, int keys, int versions, Duration timeout)
            throws InterruptedException {
        long at = System.currentTimeMillis();
        long started = System.nanoTime();
        try (ReplicaHandle replica = ReplicaRegistry.acquire(props)) {
            awaitWatermark(replica, at, timeout);
            int key = keys / 2;
            LookupResult r = replica.asOf(TABLE, RowKey.of((long) key), at);
            double secs = (System.nanoTime() - started) / 1e9;
            requireLastVersion(r, key, versions, "at the first lookup of " + props.get("replica.name"));
            return secs;
        }
    }

    private static void requireLastVersion(LookupResult r, int key, int versions, String when) {
        BigDecimal expected = BenchPostgres.originalPrice(key).add(BigDecimal.valueOf(versions - 1L));
        if (!(r instanceof LookupResult.Found f) || !(f.version().row().get("price") instanceof BigDecimal price)
                || price.compareTo(expected) != 0) {
            throw new IllegalStateException("key " + key + " does not carry its last version " + when + ": " + r);
        }
    }

    private static void awaitWatermark(ReplicaHandle replica, long timestamp, Duration timeout) throws InterruptedException {
        if (!replica.watermark().await(timestamp, timeout)) {
            throw new IllegalStateException("the replica's watermark did not pass " + timestamp + " within " + timeout
                    + "; health: " + replica.health());
        }
    }
}
