package io.asofconnect.replica.capture;

import io.asofconnect.lookup.RowKey;
import io.asofconnect.replica.ReplicaConfig;
import io.asofconnect.store.VersionStore;
import io.asofconnect.store.WatermarkTracker;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * The engine's batch consumer: applies a batch's row changes to the store, records the batch's source
 * offsets and the watermark its probes reached, commits all of it at once, and only then tells the engine
 * the records are processed (which lets it flush the LSN to the server). A crash before the commit replays
 * the batch; a crash after it resumes from the committed offsets. Replays are absorbed because a version
 * is keyed by its source position.
 *
 * <p>A batch's committed offset stops before a trailing run of streamed row changes that share one LSN. Several
 * changes carry the same LSN when one WAL record holds many rows (COPY and other heap multi-inserts write one
 * record per page of rows), and Debezium 3.6.1 resumes strictly after the stored LSN, so an offset taken from
 * inside such a run would skip the rest of the run on restart: debezium/dbz#1554, fixed upstream later with an
 * {@code lsn_events_processed} offset field that 3.6.1 does not have. The run's versions are still written;
 * its offset is committed by a later batch, once a record with another LSN shows the run has ended, and a
 * replay of the run is absorbed. The held-back records are not reported processed either, so the LSN the
 * engine confirms to the server never passes the committed offset.
 */
public final class BatchApplier implements DebeziumEngine.ChangeConsumer<RecordChangeEvent<SourceRecord>> {
    private static final Logger LOG = LoggerFactory.getLogger(BatchApplier.class);
    /** Meta key: set while the history start still has to be raised to the first watermark after a snapshot. */
    public static final String META_HISTORY_START_PENDING = "replica.history.start.pending";
    /** Meta key: the latest time at which the snapshot read a row (its source {@code ts_ms}). */
    static final String META_SNAPSHOT_READ_UNTIL = "replica.snapshot.read.until";

    private final VersionStore store;
    private final WatermarkTracker tracker;
    private final ChangeEventMapper mapper;
    private final OffsetCodec offsets;
    private final String probePrefix;
    private final long safetyMarginMs;
    private final long retentionMs;
    private final LongSupplier clock;
    private final long pruneEveryMs;
    private long lastPrune;
    private long snapshotRecords;
    private long changeRecords;
    /** The LSN of the run the previous batch held back, or null: a batch may begin with the rest of that run. */
    private Long heldBackLsn;

    public BatchApplier(ReplicaConfig config, VersionStore store, WatermarkTracker tracker, OffsetCodec offsets, LongSupplier clock) {
        this.store = store;
        this.tracker = tracker;
        this.mapper = new ChangeEventMapper(config);
        this.offsets = offsets;
        this.probePrefix = WatermarkProber.prefixFor(config.name());
        this.safetyMarginMs = config.watermarkSafetyMarginMs();
        this.retentionMs = config.historyRetentionMs();
        this.clock = clock;
        this.pruneEveryMs = pruneInterval(retentionMs);
        // The first prune comes within a minute of start, so a worker restarted more often than the interval still prunes.
        this.lastPrune = clock.getAsLong() - pruneEveryMs + Math.min(pruneEveryMs, 60_000);
    }

    @Override
    public void handleBatch(List<RecordChangeEvent<SourceRecord>> records, DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer)
            throws InterruptedException {
        long watermark = store.watermark();
        Map<Map<String, ?>, Map<String, ?>> lastOffsets = new LinkedHashMap<>();
        Map<SameLsn, Integer> ordinals = new HashMap<>();
        HeldBack held = heldBack(records);
        int settled = held.settled();
        long snapshotRead = Long.MIN_VALUE;
        try {
            for (int i = 0; i < records.size(); i++) {
                SourceRecord r = records.get(i).record();
                if (ChangeEventMapper.isRowChange(r)) {
                    snapshotRead = Math.max(snapshotRead, apply(r, ordinals));
                } else {
                    long probe = probeTime(r);
                    if (probe != Long.MIN_VALUE) {
                        watermark = Math.max(watermark, probe - safetyMarginMs);
                    }
                }
                if (i < settled && r.sourcePartition() != null && r.sourceOffset() != null) {
                    lastOffsets.put(r.sourcePartition(), r.sourceOffset());
                }
            }
            for (Map.Entry<Map<String, ?>, Map<String, ?>> e : lastOffsets.entrySet()) {
                store.putOffset(offsets.key(e.getKey()), offsets.value(e.getValue()));
            }
            if (snapshotRead != Long.MIN_VALUE && snapshotRead > snapshotReadUntil()) {
                store.setMeta(META_SNAPSHOT_READ_UNTIL, Long.toString(snapshotRead));
            }
            if (watermark > store.watermark()) {
                watermark = publishable(watermark);
                if (watermark > store.watermark()) {
                    store.setWatermark(watermark);
                }
            }
            maybePrune(watermark);
            store.commit();
        } catch (RuntimeException e) {
            store.rollback();
            throw e;
        }
        tracker.advanceTo(watermark);
        heldBackLsn = held.lsn();
        for (int i = 0; i < settled; i++) {
            committer.markProcessed(records.get(i));
        }
        committer.markBatchFinished();
    }

    /**
     * Which leading records of the batch may have their offsets committed: all but a trailing run of records
     * sharing one LSN if that run holds a streamed row change, or continues the run the previous batch held back
     * (a heartbeat repeats the offset of the last change it saw). Records without an LSN belong to the run around
     * them. Snapshot rows all share the snapshot's LSN and are committed as they come, as are other records.
     */
    private HeldBack heldBack(List<RecordChangeEvent<SourceRecord>> records) {
        int start = records.size();
        Long runLsn = null;
        boolean rowRun = false;
        while (start > 0) {
            SourceRecord r = records.get(start - 1).record();
            Long lsn = offsetLsn(r);
            if (lsn != null && runLsn != null && !lsn.equals(runLsn)) {
                break;
            }
            if (lsn != null) {
                runLsn = lsn;
            }
            rowRun |= isStreamedRowChange(r);
            start--;
        }
        if (start == 0 && runLsn != null && runLsn.equals(heldBackLsn)) {
            rowRun = true;
        }
        return rowRun ? new HeldBack(start, runLsn) : new HeldBack(records.size(), null);
    }

    /** The first {@code settled} records of a batch may be committed; the rest share {@code lsn} (null when none are held back). */
    private record HeldBack(int settled, Long lsn) {
    }

    private static boolean isStreamedRowChange(SourceRecord r) {
        return ChangeEventMapper.isRowChange(r) && !ChangeEventMapper.isSnapshot(((Struct) r.value()).getStruct("source"));
    }

    /** The LSN in a record's source offset, or null. */
    private static Long offsetLsn(SourceRecord r) {
        return r.sourceOffset() != null && r.sourceOffset().get("lsn") instanceof Number n ? n.longValue() : null;
    }

    /**
     * The watermark to publish for {@code candidate}: itself, except while the history start is pending after a
     * snapshot. Rows of a snapshot taken now reflect the source as of its reads, so the history cannot start
     * before the last read; and a history that starts above the published watermark leaves times at or below
     * the watermark that are neither answerable nor ever will be, which readers would take for pruned history.
     * So the watermark stays where it was until a probe reaches past the snapshot's last read, and then the
     * history starts at that very watermark: from then on the history start is never above the watermark, and
     * every time past the watermark is one the history will cover (readers hold it, never fail it).
     */
    private long publishable(long candidate) {
        if (!store.meta(META_HISTORY_START_PENDING).map(Boolean::parseBoolean).orElse(false)) {
            return candidate;
        }
        long readUntil = snapshotReadUntil();
        if (candidate < readUntil) {
            return store.watermark();
        }
        store.setHistoryStart(candidate);
        store.setMeta(META_HISTORY_START_PENDING, "false");
        LOG.info("History of the replica starts at {}, the first watermark past the snapshot's last read ({})", candidate,
                readUntil == Long.MIN_VALUE ? "no rows" : Long.toString(readUntil));
        return candidate;
    }

    /** The latest time the snapshot read a row, as stored, or {@link Long#MIN_VALUE}. */
    private long snapshotReadUntil() {
        return store.meta(META_SNAPSHOT_READ_UNTIL).map(Long::parseLong).orElse(Long.MIN_VALUE);
    }

    /** One key at one LSN: the changes sharing it within a batch are numbered in batch order. */
    private record SameLsn(String table, Long lsn, RowKey key) {
    }

    /** Applies one row change; returns the time a snapshot row was read, or {@link Long#MIN_VALUE} for a change. */
    private long apply(SourceRecord r, Map<SameLsn, Integer> ordinals) {
        Struct source = ((Struct) r.value()).getStruct("source");
        RowKey key = ChangeEventMapper.key(r);
        int ordinal = ordinals.merge(new SameLsn(ChangeEventMapper.table(r), source.getInt64("lsn"), key), 1, Integer::sum) - 1;
        ChangeEventMapper.Change c = mapper.map(r, key, ordinal, store);
        store.put(c.table(), c.key(), c.version());
        if (c.snapshot()) {
            snapshotRecords++;
            Long read = source.schema().field("ts_ms") == null ? null : source.getInt64("ts_ms");
            return read == null ? Long.MIN_VALUE : read;
        }
        changeRecords++;
        return Long.MIN_VALUE;
    }

    /** The probe time carried by one of our logical decoding messages, or {@link Long#MIN_VALUE}. */
    private long probeTime(SourceRecord r) {
        if (!(r.value() instanceof Struct v) || v.schema().field("message") == null || !"m".equals(v.getString("op"))) {
            return Long.MIN_VALUE;
        }
        Struct m = v.getStruct("message");
        if (m == null || !probePrefix.equals(m.getString("prefix"))) {
            return Long.MIN_VALUE;
        }
        Object content = m.get("content");
        String text;
        if (content instanceof byte[] b) {
            text = new String(b, StandardCharsets.UTF_8);
        } else if (content instanceof ByteBuffer bb) {
            ByteBuffer d = bb.duplicate();
            byte[] b = new byte[d.remaining()];
            d.get(b);
            text = new String(b, StandardCharsets.UTF_8);
        } else {
            return Long.MIN_VALUE;
        }
        try {
            return Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            LOG.warn("Ignoring a watermark message with prefix {} whose content is not epoch millis", probePrefix);
            return Long.MIN_VALUE;
        }
    }

    /**
     * How often retention runs. A prune walks every version of the store inside a batch's transaction, so it
     * runs at most every max(60 s, retention / 10): the file holds at most a tenth more history than asked. A
     * retention shorter than a minute (tests, demos) prunes once per retention, but not more than once a second.
     */
    public static long pruneInterval(long retentionMs) {
        return Math.max(1000, Math.max(Math.min(60_000, retentionMs), retentionMs / 10));
    }

    private void maybePrune(long watermark) {
        long now = clock.getAsLong();
        if (watermark == Long.MIN_VALUE || now - lastPrune < pruneEveryMs) {
            return;
        }
        lastPrune = now;
        long horizon = watermark - retentionMs;
        if (horizon > store.historyStart()) {
            long started = System.nanoTime();
            long removed = store.prune(horizon);
            LOG.debug("Retention pruned {} versions before {} in {} ms", removed, horizon, (System.nanoTime() - started) / 1_000_000);
        }
    }

    /** Snapshot rows applied since this applier was created (counting replays). */
    public long snapshotRecords() {
        return snapshotRecords;
    }

    /** Streamed changes applied since this applier was created (counting replays). */
    public long changeRecords() {
        return changeRecords;
    }
}
