package io.asofconnect.replica;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * Runs one replica in its own JVM, for crash tests:
 * {@code ReplicaProcessMain <props file> <stop file> [<table> <int key> | <table> versions]}.
 * Prints {@code SNAPSHOT_IN_PROGRESS} once some snapshot rows are committed, {@code STARTED} once the replica has caught
 * up once, and, given a table and key, {@code KEY_APPLIED} once that key has a version (applied, perhaps not yet
 * committed: a test kills on it to land inside a large transaction). Given a table and {@code versions}, it prints
 * {@code APPLIED n} each time the store holds more versions of that table, committed or not, than it last printed:
 * a test compares the last count before a kill with what the store kept. When the stop file appears, it waits until
 * the watermark reaches the epoch millis written in it, closes the replica and prints {@code STOPPED}. It asks for
 * each watermark it waits for, as a reader does, so that it needs no probe schedule.
 */
public final class ReplicaProcessMain {
    private ReplicaProcessMain() {
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        try (InputStream in = Files.newInputStream(Path.of(args[0]))) {
            p.load(in);
        }
        Path stop = Path.of(args[1]);
        Map<String, Object> props = new HashMap<>();
        p.forEach((k, v) -> props.put(k.toString(), v));
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        try (ReplicaHandle h = ReplicaRegistry.acquire(props)) {
            // Tells a crash test that the snapshot is under way: some of its rows are committed, not all. Commits are
            // grouped, so applied rows say nothing about it: the committed offsets stopping inside the snapshot do.
            while (h.watermark().get() == Long.MIN_VALUE && System.nanoTime() < deadline) {
                if (h.replica().snapshotCommittedInProgress()) {
                    System.out.println("SNAPSHOT_IN_PROGRESS");
                    break;
                }
                Thread.sleep(5);
            }
            long now = System.currentTimeMillis();
            h.watermark().want(now);
            if (!h.watermark().await(now, Duration.ofSeconds(60))) {
                System.out.println("NOT CAUGHT UP " + h.health());
                System.exit(2);
            }
            System.out.println("STARTED");
            boolean countVersions = args.length > 3 && args[3].equals("versions");
            String versionsTable = countVersions ? args[2] : null;
            long versionsPrinted = 0;
            String progressTable = args.length > 3 && !countVersions ? args[2] : null;
            io.asofconnect.common.lookup.RowKey progressKey = progressTable != null ? io.asofconnect.common.lookup.RowKey.of(Integer.parseInt(args[3])) : null;
            while (!Files.exists(stop)) {
                if (progressTable != null && !h.replica().store().history(progressTable, progressKey).isEmpty()) {
                    System.out.println("KEY_APPLIED");
                    progressTable = null;
                }
                if (versionsTable != null) {
                    // The store answers reads with what was applied, committed or not.
                    long n = 0;
                    for (io.asofconnect.common.lookup.RowKey k : h.replica().store().keys(versionsTable)) {
                        n += h.replica().store().history(versionsTable, k).size();
                    }
                    if (n > versionsPrinted) {
                        System.out.println("APPLIED " + n);
                        versionsPrinted = n;
                    }
                }
                if (System.nanoTime() > deadline) {
                    System.out.println("NO STOP FILE");
                    System.exit(3);
                }
                Thread.sleep(progressTable != null ? 2 : versionsTable != null ? 20 : 50);
            }
            long target = Long.parseLong(Files.readString(stop).trim());
            h.watermark().want(target);
            if (!h.watermark().await(target, Duration.ofSeconds(60))) {
                System.out.println("WATERMARK NOT REACHED " + h.health());
                System.exit(4);
            }
        }
        System.out.println("STOPPED");
        System.exit(0);
    }
}
