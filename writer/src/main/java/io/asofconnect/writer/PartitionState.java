package io.asofconnect.writer;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.sink.SinkRecord;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * One assigned partition: the epoch this task holds it under, the next offset the target has committed,
 * the records accepted since (to be written), and the records its host holds back before they may be
 * accepted (the sink's enrichment holds those its replica cannot answer yet). Offsets are the record's
 * original Kafka coordinates (before any SMT renamed its topic), since those are what the consumer commits.
 *
 * <p>Every record moves through, in offset order: held (optional) → accepted (buffered to be written, or
 * skipped: it writes nothing but its offset still advances) → committed.
 *
 * <p>A host may also {@link #emit} rows of its own making (the window join's results), which the next commit writes
 * after the buffered records but which consume no offset, and {@link #markChanged mark} the partition when only its
 * {@link SideTables} rows changed. The sink does neither.
 */
public final class PartitionState {
    /**
     * A record waiting for the replica's watermark, when it started waiting and how long it may
     * ({@link System#nanoTime}), and when it reached the task (its read-your-writes bound,
     * {@code io.asofconnect.enrich.ReceiptTimes}).
     */
    public record Held(SinkRecord record, long sinceNanos, long waitNanos, long receivedAt) {
    }

    private final TopicPartition tp;
    private final long epoch;
    private long committedNext;
    private long acceptedNext;
    private final List<SinkRecord> buffer = new ArrayList<>();
    private final List<SinkRecord> emitted = new ArrayList<>();
    private boolean changed;
    private final ArrayDeque<Held> held = new ArrayDeque<>();
    private boolean paused;
    /** Offsets reported as errant since the last commit: a retried flush meets them again and must not report them twice. */
    private final Set<Long> reported = new HashSet<>();

    public PartitionState(TopicPartition tp, long epoch, long committedNext) {
        this.tp = tp;
        this.epoch = epoch;
        this.committedNext = committedNext;
        this.acceptedNext = committedNext;
    }

    public static TopicPartition partitionOf(SinkRecord r) {
        return new TopicPartition(r.originalTopic(), r.originalKafkaPartition());
    }

    public TopicPartition partition() {
        return tp;
    }

    public long epoch() {
        return epoch;
    }

    /** The next offset the target holds, or {@link OffsetStore#NO_OFFSET} before the first commit. */
    public long committedNext() {
        return committedNext;
    }

    /** The offset after the last accepted record: what the next flush commits. */
    public long targetNext() {
        return acceptedNext;
    }

    /** False for a record at or before one already committed, accepted or held: a re-delivery. */
    public boolean isNew(SinkRecord r) {
        long next = held.isEmpty() ? acceptedNext : held.peekLast().record().originalKafkaOffset() + 1;
        return next == OffsetStore.NO_OFFSET || r.originalKafkaOffset() >= next;
    }

    /** The record is to be written. */
    public void accept(SinkRecord r) {
        buffer.add(r);
        acceptedNext = r.originalKafkaOffset() + 1;
    }

    /** The record writes nothing (dropped, or reported as errant), but its offset advances. */
    public void skip(SinkRecord r) {
        acceptedNext = r.originalKafkaOffset() + 1;
    }

    public void hold(SinkRecord r, long nowNanos, long waitNanos, long receivedAt) {
        held.addLast(new Held(r, nowNanos, waitNanos, receivedAt));
    }

    public ArrayDeque<Held> held() {
        return held;
    }

    public boolean paused() {
        return paused;
    }

    public void paused(boolean p) {
        paused = p;
    }

    public List<SinkRecord> buffered() {
        return buffer;
    }

    public boolean wasReported(long offset) {
        return reported.contains(offset);
    }

    public void reported(long offset) {
        reported.add(offset);
    }

    /**
     * A row to be written with this partition's next commit, after its buffered records; it consumes no offset. Its
     * rows go through the writer's row mapping like records do: a row that can never be written goes to the flush's
     * {@link BatchWriter.BadRecordHandler}.
     */
    public void emit(SinkRecord row) {
        emitted.add(row);
    }

    /** The rows emitted since the last commit, in the order they were emitted. */
    public List<SinkRecord> emitted() {
        return emitted;
    }

    /**
     * The partition has something to commit though it accepted no record and emitted no row: its side tables changed
     * (a watermark moved, say). The next flush then commits it, checking its epoch as always.
     */
    public void markChanged() {
        changed = true;
    }

    /** Whether the next flush has something to commit for this partition: an accepted record, an emitted row or a change. */
    public boolean hasUncommitted() {
        return acceptedNext != committedNext || !emitted.isEmpty() || changed;
    }

    /**
     * Forgets everything since the last commit: buffered and held records, emitted rows, the changed mark; the
     * accepted position goes back to {@link #committedNext}. For a host that rebuilds its state from the committed one
     * after a failed flush (and rewinds its consumer there). Offsets already reported as errant stay known, so that
     * the replay does not report them again.
     */
    public void discardUncommitted() {
        buffer.clear();
        held.clear();
        emitted.clear();
        changed = false;
        acceptedNext = committedNext;
    }

    /**
     * The target now holds everything before {@code next}: those records leave the buffer. The emitted rows and the
     * changed mark are cleared: a commit at or past the last one holds them.
     */
    public void committed(long next) {
        committedNext = next;
        emitted.clear();
        changed = false;
        buffer.removeIf(r -> r.originalKafkaOffset() < next);
        reported.removeIf(o -> o < next);
        if (acceptedNext == OffsetStore.NO_OFFSET || acceptedNext < next) {
            acceptedNext = next;
        }
    }
}
