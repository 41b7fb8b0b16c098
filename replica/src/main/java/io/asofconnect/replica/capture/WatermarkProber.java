package io.asofconnect.replica.capture;

import io.asofconnect.replica.watermark.WatermarkTracker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * Writes a non-transactional logical decoding message through the source's WAL at a fixed interval. Logical
 * decoding delivers such a message at its WAL position, after every transaction whose commit record
 * precedes it, so when the engine hands it to us, every transaction committed before the message's time
 * (less a safety margin) has been delivered. This is what advances the watermark, and it also moves the
 * slot forward while the captured tables are idle.
 *
 * <p>The message carries the server's clock and the tracker's {@link WatermarkTracker#probeToken}, taken just
 * before the probe was sent, and {@link WatermarkTracker#instance} ({@link ProbeMessage} is its format), from
 * which the applier raises the receipt watermark ({@link #probeSoon}).
 */
public final class WatermarkProber implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WatermarkProber.class);
    private static final String RETAINED_WAL = "SELECT coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0)::bigint"
            + " FROM pg_replication_slots WHERE slot_name = ?";

    private final PgConnector connector;
    private final String prefix;
    private final Supplier<String> who;
    private final long intervalMs;
    /**
     * Not tied to the interval: at 200 ms a timeout of a few intervals would fail probes on any busy server and
     * warn for nothing; a probe that takes this long means the source is really unwell.
     */
    private static final int QUERY_TIMEOUT_SECONDS = 10;
    /**
     * The least time between two probes asked for by readers ({@link #probeFor}). Each costs the source one
     * short transaction; records keep arriving while one is on its way, and one probe answers all that arrived
     * before it, so asking more often would add load without holding records for less.
     */
    static final long DEMAND_SPACING_MS = 20;
    /** The latest source time a probe has been asked for by {@link #probeFor}; later wishes need a new one. */
    private final AtomicLong demandedUpTo = new AtomicLong(Long.MIN_VALUE);
    /** Whether a probe asked for by {@link #probeSoon} is scheduled and has not yet taken its token. */
    private final AtomicBoolean soonQueued = new AtomicBoolean();
    /** Local time the last probe was sent ({@link System#nanoTime}), for the spacing of asked-for probes. */
    private volatile long lastSentNanos = System.nanoTime() - TimeUnit.MILLISECONDS.toNanos(DEMAND_SPACING_MS);
    private final ScheduledExecutorService timer;
    private final WatermarkTracker clock;
    private final String slotName;
    private final ReplicaStats stats;
    private Connection connection;
    private volatile String lastError;

    /** @param clock told each probe's reading of the source's clock */
    public WatermarkProber(PgConnector connector, String replicaName, long intervalMs, WatermarkTracker clock) {
        this(connector, replicaName, () -> "Replica " + replicaName, intervalMs, clock, null, new ReplicaStats());
    }

    /**
     * @param who      how problem lines name the replica and the tasks using it
     * @param slotName the replica's slot, whose retained WAL each probe also reads into {@code stats}
     */
    public WatermarkProber(PgConnector connector, String replicaName, Supplier<String> who, long intervalMs, WatermarkTracker clock,
                           String slotName, ReplicaStats stats) {
        this.who = who;
        this.slotName = slotName;
        this.stats = stats;
        this.connector = connector;
        this.clock = clock;
        this.prefix = ProbeMessage.prefixFor(replicaName);
        this.intervalMs = intervalMs;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "asof-replica-watermark-" + replicaName);
            t.setDaemon(true);
            return t;
        });
    }

    public void start() {
        timer.scheduleWithFixedDelay(() -> probe(), 0, intervalMs, TimeUnit.MILLISECONDS);
    }

    /**
     * One extra probe, at local time {@code atMillis} or at once if that has passed, besides the schedule. For a
     * moment the watermark must pass soon and the schedule would reach late: after an initial snapshot the
     * watermark can only move once a probe stamped past the snapshot's last read (plus the safety margin) comes
     * through, and the next scheduled probe is up to a whole interval away. Runs on the probes' own thread, so
     * it never overlaps one; ignored once the prober is closed.
     */
    public void probeAt(long atMillis) {
        try {
            timer.schedule(() -> probe(), Math.max(0, atMillis - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closed) {
            // Closing: nothing is waiting for this probe any more.
        }
    }

    /**
     * A probe stamped at or after {@code sourceMillis} (the source's clock) as soon as the source's clock gets
     * there, besides the schedule: a reader holds records until the watermark passes a time, and the scheduled
     * probe that would let it is up to an interval away. Wishes that an earlier one already covers, or that lie
     * an interval or more ahead (the schedule gets there as soon), ask for nothing; asked-for probes are at least
     * {@link #DEMAND_SPACING_MS} apart. Never blocks; runs on the probes' own thread; ignored once closed.
     */
    public void probeFor(long sourceMillis) {
        long now = clock.sourceNow();
        if (sourceMillis - now >= intervalMs) {
            return;
        }
        long target;
        while (true) {
            long asked = demandedUpTo.get();
            if (sourceMillis <= asked) {
                return;
            }
            target = asked == Long.MIN_VALUE ? sourceMillis : Math.max(sourceMillis, asked + DEMAND_SPACING_MS);
            if (demandedUpTo.compareAndSet(asked, target)) {
                break;
            }
        }
        schedule(target, target - now);
    }

    /**
     * A probe sent as soon as the spacing of asked-for probes allows ({@link #DEMAND_SPACING_MS}), besides the
     * schedule: a reader holds a record received just now until the receipt watermark passes its receipt, and any
     * probe sent after that moment lets it. One queued probe serves every wish made before it takes its token, so
     * wishes never queue more than one. Never blocks; runs on the probes' own thread; ignored once closed.
     */
    public void probeSoon() {
        if (!soonQueued.compareAndSet(false, true)) {
            return;
        }
        long waitNanos = lastSentNanos + TimeUnit.MILLISECONDS.toNanos(DEMAND_SPACING_MS) - System.nanoTime();
        try {
            timer.schedule(() -> probe(), Math.max(0, waitNanos), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closed) {
            // Closing: nothing is waiting for this probe any more.
        }
    }

    private void schedule(long target, long delayMs) {
        try {
            timer.schedule(() -> probeUntil(target), Math.max(0, delayMs), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closed) {
            // Closing: nothing is waiting for this probe any more.
        }
    }

    /**
     * Probes, and probes again later if the stamp came short of {@code target}: {@link WatermarkTracker#sourceNow}
     * may run ahead of the source by a round trip. A failed probe is left to the schedule, which retries anyway.
     */
    private void probeUntil(long target) {
        long stamp = probe();
        if (stamp != Long.MIN_VALUE && stamp < target) {
            schedule(target, target - stamp);
        }
    }

    /** The last probe's error, or null when the last probe went through. */
    public String lastError() {
        return lastError;
    }

    /** @return the probe's stamp on the source's clock, or {@link Long#MIN_VALUE} when it failed */
    private long probe() {
        // From here on a wish needs a later probe; every wish made before is covered by this one's token, taken below.
        soonQueued.set(false);
        long stamp;
        try {
            if (connection == null || connection.isClosed()) {
                connection = connector.open("watermark prober");
                connection.setAutoCommit(true);
            }
            try (PreparedStatement ps = connection.prepareStatement(ProbeMessage.EMIT)) {
                ps.setString(1, prefix);
                ps.setQueryTimeout(QUERY_TIMEOUT_SECONDS);
                lastSentNanos = System.nanoTime();
                // Taken after every receipt that wished for this probe, and before the message is written.
                ps.setString(2, ProbeMessage.afterStamp(clock.probeToken(), clock.instance()));
                long sentAt = System.currentTimeMillis();
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    stamp = rs.getLong(1);
                    clock.observeSourceClock(stamp, sentAt);
                }
            }
            if (slotName != null) {
                readRetainedWal();
            }
            if (lastError != null) {
                LOG.info("Watermark probes for {} go through again", prefix);
            }
            lastError = null;
            return stamp;
        } catch (SQLException | RuntimeException e) {
            if (lastError == null) {
                LOG.warn("{}: watermark probe failed, retrying every {} ms; records wait until it succeeds: {}. Check that the"
                        + " source database is reachable and that the replica's user may call pg_logical_emit_message",
                        who.get(), intervalMs, e.getMessage());
            }
            lastError = e.getMessage();
            closeConnection();
            return Long.MIN_VALUE;
        }
    }

    /** What the slot costs the source: WAL from the slot's restart LSN to the server's current one. */
    private void readRetainedWal() throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(RETAINED_WAL)) {
            ps.setString(1, slotName);
            ps.setQueryTimeout(QUERY_TIMEOUT_SECONDS);
            try (ResultSet rs = ps.executeQuery()) {
                stats.retainedWalBytes(rs.next() ? rs.getLong(1) : -1);
            }
        }
    }

    private void closeConnection() {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException e) {
                LOG.debug("closing the prober connection failed", e);
            }
            connection = null;
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
        try {
            if (!timer.awaitTermination(10, TimeUnit.SECONDS)) {
                LOG.warn("{}: the watermark prober did not stop within 10 s; look for a stuck probe in the source's"
                        + " pg_stat_activity", who.get());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        closeConnection();
    }
}
