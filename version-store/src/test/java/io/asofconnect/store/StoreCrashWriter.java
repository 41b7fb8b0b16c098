package io.asofconnect.store;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * Run in its own JVM by {@link StoreCrashTest}: continues a deterministic sequence of transactions from
 * where the store's last commit left it, printing each sequence number once it is committed, until
 * it is killed. Transaction {@code n}: a row version of key {@code n % KEYS} at valid-from {@code n},
 * a second change of key {@code (n * 7) % KEYS} at the same instant (a tombstone every third
 * transaction), the offset {@code n}, watermark {@code n} and meta {@code crash.seq = n}; every
 * {@value #BULK_EVERY}th transaction also puts one version of each of {@value #BULK_KEYS} keys of
 * {@value #BULK_TABLE}, a bulk load in one commit (a kill then often lands inside its append).
 *
 * <p>Options after the store path: {@code pause=P} applies transaction {@code P + 1} without
 * committing it once {@code P} is committed, prints {@code PAUSED P} and waits to be killed;
 * {@code checkpoint=B} checkpoints whenever the journal passes B bytes, so
 * that kills land during checkpoints too.
 */
public final class StoreCrashWriter {
    static final String TABLE = "public.crash";
    static final int KEYS = 40;
    static final String SEQ = "crash.seq";
    static final String DAMAGED = "DAMAGED";
    static final String PAUSED = "PAUSED ";
    static final String BULK_TABLE = "public.bulk";
    static final int BULK_EVERY = 200;
    static final int BULK_KEYS = 5000;
    static final ByteBuffer OFFSET_KEY = ByteBuffer.wrap("partition".getBytes(StandardCharsets.UTF_8));

    private StoreCrashWriter() {
    }

    public static void main(String[] args) throws InterruptedException {
        Path file = Path.of(args[0]);
        long pauseAt = Long.MAX_VALUE;
        long checkpointBytes = 0;
        for (int i = 1; i < args.length; i++) {
            if (args[i].startsWith("pause=")) {
                pauseAt = Long.parseLong(args[i].substring("pause=".length()));
            } else if (args[i].startsWith("checkpoint=")) {
                checkpointBytes = Long.parseLong(args[i].substring("checkpoint=".length()));
            } else {
                throw new IllegalArgumentException("unknown writer option " + args[i]);
            }
        }
        MapDbVersionStore store = MapDbVersionStore.open(file, StoreOptions.defaults(), checkpointBytes);
        long n = store.meta(SEQ).map(Long::parseLong).orElse(0L);
        System.out.println("OPENED " + store.openOutcome().kind() + " " + n);
        System.out.flush();
        try {
            while (true) {
                n++;
                apply(store, n);
                if (n > pauseAt) {
                    System.out.println(PAUSED + (n - 1));
                    System.out.flush();
                    Thread.sleep(Long.MAX_VALUE);
                }
                store.commit();
                System.out.println(n);
                System.out.flush();
            }
        } catch (StoreCorruptedException e) {
            // The store found damage a crash left behind (MapDB can reopen such files); the test expects a rebuild next.
            System.out.println(DAMAGED);
            System.out.flush();
            System.exit(3);
        }
    }

    static void apply(VersionStore store, long n) {
        for (Change c : changes(n)) {
            store.put(TABLE, c.key(), c.version());
        }
        store.putOffset(OFFSET_KEY.duplicate(), ByteBuffer.wrap(Long.toString(n).getBytes(StandardCharsets.UTF_8)));
        store.setWatermark(n);
        store.setMeta(SEQ, Long.toString(n));
        if (n % BULK_EVERY == 0) {
            for (int k = 0; k < BULK_KEYS; k++) {
                store.put(BULK_TABLE, RowKey.of(k), bulkVersion(k, n));
            }
        }
    }

    static Version bulkVersion(int key, long n) {
        return new Version(n, new SourcePosition(n, 2 + key), TestRows.row(key, n, key % 2 == 0));
    }

    record Change(RowKey key, Version version) {
    }

    static Change[] changes(long n) {
        RowKey first = RowKey.of(n % KEYS);
        RowKey second = RowKey.of((n * 7) % KEYS);
        Version v1 = new Version(n, new SourcePosition(n, 0), TestRows.row(n % KEYS, n, n % 2 == 0));
        Version v2 = n % 3 == 0
                ? Version.tombstone(n, new SourcePosition(n, 1))
                : new Version(n, new SourcePosition(n, 1), TestRows.row((n * 7) % KEYS, -n, true));
        return new Change[]{new Change(first, v1), new Change(second, v2)};
    }
}
