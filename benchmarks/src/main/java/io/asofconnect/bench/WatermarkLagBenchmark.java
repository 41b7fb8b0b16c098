package io.asofconnect.bench;

import io.asofconnect.replica.ReplicaHandle;
import io.asofconnect.replica.ReplicaRegistry;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * How long read-your-writes holds a record, on an idle source with the replica's default probe and engine
 * settings (the benchmark's own faster probes are not used here), three ways:
 * <ul>
 *   <li>the watermark passing "now" on the probe schedule alone (no reader says it waits);</li>
 *   <li>the watermark passing "now" when the reader asks for it ({@code wantWatermark}): a probe stamped past now
 *       plus the safety margin;</li>
 *   <li>the receipt watermark passing a receipt taken now when the reader asks for it ({@code wantReceiptWatermark}):
 *       any probe sent after the receipt, with no margin. This is the sink's and the transform's hold today.</li>
 * </ul>
 * A record that reaches a task waits about this long before it can be enriched, and a partition can hold only
 * {@code buffer.max.records} meanwhile, so the figure also caps a hosted sink's throughput per partition (that
 * bound divided by this wait).
 *
 * <p>Each sample starts at a random moment (0-99 ms after the last), so the probe's phase is uniform. Prints the
 * median, the 90th percentile and the maximum of each.
 *
 * <p>Run: {@code java -cp benchmarks/target-bench/benchmarks.jar io.asofconnect.bench.WatermarkLagBenchmark [samples]}
 * (default 100).
 */
public final class WatermarkLagBenchmark {
    static final String TABLE = "public.products";

    private WatermarkLagBenchmark() {
    }

    /** One wait: true when the bound was passed in time. */
    private interface Wait {
        boolean await() throws InterruptedException;
    }

    /** The waits in milliseconds, sorted, each started at a random moment 0-99 ms after the previous one ended. */
    private static List<Double> sample(int samples, SplittableRandom random, Wait wait, ReplicaHandle replica) throws InterruptedException {
        List<Double> waits = new ArrayList<>(samples);
        for (int i = 0; i < samples; i++) {
            Thread.sleep(random.nextInt(100));
            long started = System.nanoTime();
            if (!wait.await()) {
                throw new IllegalStateException("the bound was not passed within 10 s; health: " + replica.health());
            }
            waits.add((System.nanoTime() - started) / 1e6);
        }
        Collections.sort(waits);
        return waits;
    }

    private static void report(String what, int samples, List<Double> waits) {
        System.out.printf("Read-your-writes hold, idle source, default replica settings, %d samples: %s%n", samples, what);
        System.out.printf("  median %.0f ms, p90 %.0f ms, max %.0f ms%n", waits.get(samples / 2),
                waits.get((int) Math.ceil(samples * 0.9) - 1), waits.get(samples - 1));
    }

    public static void main(String[] args) throws Exception {
        int samples = args.length > 0 ? Integer.parseInt(args[0]) : 100;
        if (samples < 10) {
            throw new IllegalArgumentException("samples must be at least 10, not " + samples);
        }
        try (BenchPostgres pg = new BenchPostgres("watermark-lag")) {
            pg.createAndLoad(TABLE, 1_000);
            Map<String, Object> props = pg.defaultReplicaProps("lag_replica", TABLE, pg.work().resolve("replica"));
            Duration timeout = Duration.ofSeconds(60);
            try (ReplicaHandle replica = ReplicaRegistry.acquire(props)) {
                if (!replica.watermark().await(System.currentTimeMillis(), timeout)) {
                    throw new IllegalStateException("the replica did not catch up within " + timeout + "; health: " + replica.health());
                }
                SplittableRandom random = new SplittableRandom(7);
                report("the watermark passing now, probe schedule alone", samples, sample(samples, random, () -> {
                    long now = replica.watermark().sourceNow();
                    return replica.watermark().await(now, Duration.ofSeconds(10));
                }, replica));
                report("the watermark passing now, asked for (wantWatermark)", samples, sample(samples, random, () -> {
                    long now = replica.watermark().sourceNow();
                    replica.watermark().want(now);
                    return replica.watermark().await(now, Duration.ofSeconds(10));
                }, replica));
                report("the receipt watermark passing a receipt, asked for (wantReceiptWatermark; the hold)", samples,
                        sample(samples, random, () -> {
                            long receipt = replica.watermark().sourceNow();
                            replica.watermark().wantReceipts(receipt);
                            return replica.watermark().awaitReceipts(receipt, Duration.ofSeconds(10));
                        }, replica));
            }
        }
    }
}
