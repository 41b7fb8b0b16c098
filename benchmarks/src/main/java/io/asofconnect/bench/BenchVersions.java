package io.asofconnect.bench;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.OpenOutcome;
import io.asofconnect.store.StoreOptions;
import io.asofconnect.store.VersionStore;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Timestamp;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.BiConsumer;
import java.util.stream.Stream;

/**
 * The data set the in-JVM harnesses share: {@code keys} keys × {@code versions} versions of a products row,
 * version v of key k valid from {@code BASE + v * STEP + k % STEP}; and one store file per size, loaded once
 * and reused by the lookup and the transform benchmarks. Only the {@link VersionStore} interface and
 * {@code MapDbVersionStore.open} are used, so a new store layout needs no change here: a file the store no
 * longer reads opens as CREATED or REBUILT and is loaded again.
 */
public final class BenchVersions {
    public static final String TABLE = "public.products";
    public static final long BASE = 1_700_000_000_000L;
    public static final long STEP = 1_000;
    private static final int COMMIT_EVERY = 50_000;
    private static final String COMPLETE = "bench.versions.complete";

    public static final Schema ROW = SchemaBuilder.struct().name("bench.public.products.Value")
            .field("id", Schema.INT64_SCHEMA)
            .field("name", Schema.STRING_SCHEMA)
            .field("price", Decimal.builder(2).optional().build())
            .field("category", Schema.OPTIONAL_STRING_SCHEMA)
            .field("updated_at", Timestamp.builder().optional().build())
            .build();

    private BenchVersions() {
    }

    public static Struct row(int k, int v) {
        return new Struct(ROW).put("id", (long) k).put("name", "product " + k + " rev " + v)
                .put("price", BigDecimal.valueOf(100L * k + v, 2)).put("category", "cat-" + (k % 97))
                .put("updated_at", new java.util.Date(BASE + v * STEP));
    }

    public static long validFrom(int k, int v) {
        return BASE + v * STEP + k % STEP;
    }

    /** Every version in load order (key by key), as (key, version index). */
    public static void forEach(int keys, int versions, BiConsumer<Integer, Integer> action) {
        for (int k = 0; k < keys; k++) {
            for (int v = 0; v < versions; v++) {
                action.accept(k, v);
            }
        }
    }

    /** The benchmark directory, {@code asof.bench.dir} or {@code benchmarks/target-bench}. */
    public static Path dir() {
        Path dir = Path.of(System.getProperty("asof.bench.dir", "benchmarks/target-bench"));
        try {
            return Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the benchmark directory " + dir, e);
        }
    }

    public static Path storeFile(int keys, int versions) {
        return dir().resolve("versions-" + keys + "x" + versions + ".db");
    }

    /**
     * Opens the store of this size, loading it when it is not a complete, readable file of an earlier run
     * (an interrupted load or a file of another format starts again from an empty file).
     */
    public static VersionStore openLoaded(int keys, int versions) {
        Path file = storeFile(keys, versions);
        long opening = System.nanoTime();
        VersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults());
        double openSecs = (System.nanoTime() - opening) / 1e9;
        OpenOutcome outcome = store.openOutcome();
        outcome.quarantined().ifPresent(BenchVersions::deleteWithSiblings);
        if (outcome.kind() == OpenOutcome.Kind.REOPENED && store.meta(COMPLETE).isPresent()) {
            System.out.printf("%nstore %s reused: %d keys x %d versions, opened (checkpoint and journal read) in %.2f s%n",
                    file.getFileName(), keys, versions, openSecs);
            return store;
        }
        if (store.keys(TABLE).iterator().hasNext()) {
            store.close();
            deleteWithSiblings(file);
            store = MapDbVersionStore.open(file, StoreOptions.defaults());
        }
        load(store, keys, versions);
        return store;
    }

    private static void load(VersionStore store, int keys, int versions) {
        long started = System.nanoTime();
        long[] puts = {0};
        forEach(keys, versions, (k, v) -> {
            store.put(TABLE, RowKey.of((long) k), new Version(validFrom(k, v),
                    new SourcePosition(1L + (long) v * keys + k, 0), row(k, v)));
            if (++puts[0] % COMMIT_EVERY == 0) {
                store.commit();
            }
        });
        store.setMeta(COMPLETE, "true");
        store.commit();
        double secs = (System.nanoTime() - started) / 1e9;
        System.out.printf("%nloaded %d versions in %.1f s (%.0f puts/s)%n", puts[0], secs, puts[0] / secs);
    }

    /** Bytes on disk of the store: its file and every file beside it under the same name (logs, segments). */
    public static long diskBytes(Path file) {
        String base = file.getFileName().toString();
        try (Stream<Path> siblings = Files.walk(file.toAbsolutePath().getParent(), 1)) {
            return siblings.filter(p -> p.getFileName().toString().startsWith(base) && Files.isRegularFile(p))
                    .mapToLong(BenchVersions::size).sum();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the store files of " + file, e);
        }
    }

    /** Bytes of every file under a directory. */
    public static long treeBytes(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).mapToLong(BenchVersions::size).sum();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot walk " + dir, e);
        }
    }

    /** Heap in use after a full collection, so that what an open store retains can be told apart. */
    public static long usedHeapAfterGc() {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return rt.totalMemory() - rt.freeMemory();
    }

    private static long size(Path p) {
        try {
            return Files.size(p);
        } catch (IOException e) {
            return 0;
        }
    }

    private static void deleteWithSiblings(Path file) {
        String base = file.getFileName().toString();
        try (Stream<Path> siblings = Files.list(file.toAbsolutePath().getParent())) {
            siblings.filter(p -> p.getFileName().toString().startsWith(base) && !p.getFileName().toString().endsWith(".lock"))
                    .forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete the benchmark store " + file, e);
        }
    }
}
