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
 * How long read-your-writes holds a record: the time from "now" until the replica's watermark passes it, on an
 * idle source with the replica's default probe and engine settings (the benchmark's own faster probes are not
 * used here). A record that reaches a task waits about this long before it can be enriched, and a partition
 * can hold only {@code buffer.max.records} meanwhile, so the figure also caps a hosted sink's throughput per
 * partition (that bound divided by this wait).
 *
 * <p>Each sample starts at a random moment (0-99 ms after the last), so the probe's phase is uniform; the
 * figure includes half a probe interval on average. Prints the median, the 90th percentile and the maximum.
 *
 * <p>Run: {@code java -cp benchmarks/target-bench/benchmarks.jar io.asofconnect.bench.WatermarkLagBenchmark [samples]}
 * (default 100).
 */
public final class WatermarkLagBenchmark {
    static final String TABLE = "public.products";

    private WatermarkLagBenchmark() {
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
                if (!replica.awaitWatermark(System.currentTimeMillis(), timeout)) {
                    throw new IllegalStateException("the replica did not catch up within " + timeout + "; health: " + replica.health());
                }
                SplittableRandom random = new SplittableRandom(7);
                List<Double> waits = new ArrayList<>(samples);
                for (int i = 0; i < samples; i++) {
                    Thread.sleep(random.nextInt(100));
                    long now = System.currentTimeMillis();
                    long started = System.nanoTime();
                    if (!replica.awaitWatermark(now, Duration.ofSeconds(10))) {
                        throw new IllegalStateException("the watermark did not pass a moment within 10 s; health: " + replica.health());
                    }
                    waits.add((System.nanoTime() - started) / 1e6);
                }
                Collections.sort(waits);
                System.out.printf("Watermark lag (read-your-writes hold), idle source, default replica settings, %d samples:%n", samples);
                System.out.printf("  median %.0f ms, p90 %.0f ms, max %.0f ms%n", waits.get(samples / 2),
                        waits.get((int) Math.ceil(samples * 0.9) - 1), waits.get(samples - 1));
            }
        }
    }
}
