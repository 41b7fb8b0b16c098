package io.asofconnect.bench;

import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.replica.ReplicaHandle;
import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.replica.ReplicaRegistry;

import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * Restart against rebuild: with a replica of K keys × V versions on disk, the seconds from acquiring it again
 * (what a task start does) to the first enriched record, next to rebuilding that replica from a snapshot.
 * Both go through the real {@link ReplicaRegistry} → Replica → version store path on an embedded Postgres
 * ({@link BenchPostgres}).
 *
 * <p>Build (not timed): load K rows, snapshot them into the replica, then V - 1 rounds of updating every row,
 * each streamed into the replica, so that its store holds K × V versions; release it. Then, timed:
 * <ol>
 *   <li>restart: acquire the same replica (same store, same slot) and wait until it can enrich a record that
 *       happened at that moment: its watermark passes the acquire time and the as-of lookup of a key at that
 *       time finds the row's last version (the transform holds a record until exactly that);</li>
 *   <li>rebuild: acquire a replica of the same table with an empty store and a new slot, which takes a snapshot,
 *       and wait for the same condition.</li>
 * </ol>
 * Order bias: the untimed build runs every path of both (snapshot, streaming, store) first, so both timed
 * phases start warm. Prints {@code bench restart-vs-rebuild ours=<restart s> peer=<rebuild s> ratio=<rebuild/restart>}.
 *
 * <p>Run: {@code java -cp benchmarks/target-bench/benchmarks.jar io.asofconnect.bench.ReplicaRestartBenchmark [K] [V]}
 * (defaults 1000000 and 10).
 */
public final class ReplicaRestartBenchmark {
    static final String TABLE = "public.products";

    private ReplicaRestartBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int keys = args.length > 0 ? Integer.parseInt(args[0].replace("_", "")) : 1_000_000;
        int versions = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        if (versions < 1) {
            throw new IllegalArgumentException("versions must be at least 1, not " + versions);
        }
        Duration timeout = Duration.ofSeconds(Math.max(300, keys / 200));
        System.out.printf("Replica restart vs rebuild: %,d keys x %d versions%n", keys, versions);
        try (BenchPostgres pg = new BenchPostgres("replica-restart")) {
            pg.createAndLoad(TABLE, keys);
            Map<String, Object> props = pg.replicaProps("restart_replica", TABLE, pg.work().resolve("replica"));
            build(pg, props, keys, versions, timeout);

            // What restart time depends on besides the store: the WAL the server decodes again, at each of the
            // engine's two stream starts (one to find the resume position, one to stream from it).
            long redecode = pg.walToDecodeAgain(String.valueOf(props.get(ReplicaConfig.SLOT_NAME)));
            double restart = untilFirstEnriched(props, keys, versions, timeout);
            Map<String, Object> fresh = new HashMap<>(pg.replicaProps("rebuild_replica", TABLE, pg.work().resolve("rebuilt")));
            double rebuild = untilFirstEnriched(fresh, keys, versions, timeout);

            System.out.println();
            System.out.printf("Replica of %,d keys x %d versions on disk, embedded Postgres:%n", keys, versions);
            System.out.printf("  restart (acquire -> first enriched record): %8.2f s   (slot's WAL from restart LSN to confirmed flush: %,d bytes)%n",
                    restart, redecode);
            System.out.printf("  rebuild from a snapshot (same condition):  %8.2f s   rebuild / restart %.1f%n", rebuild, rebuild / restart);
            BenchLine.duration("restart-vs-rebuild", restart, rebuild);
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
