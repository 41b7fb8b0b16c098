package io.asofconnect.sink;

import io.asofconnect.sink.enrichment.EnrichmentStage;
import io.asofconnect.writer.OffsetStore;
import io.asofconnect.writer.PartitionState;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTaskContext;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The records the task holds until the writer commits them, per assigned partition ({@link PartitionState}: the
 * records to write, and those the enrichment holds back), and when they are due to be written: once
 * {@code batch.size} records are buffered, or once the buffer has lingered {@code batch.linger.ms} since it last
 * went from empty to not. Task thread only, but for the counts, which the metrics reporter's thread reads.
 *
 * <p>With a group header ({@code changelog.group.header}) a record is accepted only once its group is complete: the
 * records of a partition after its last record carrying the header wait in an open group, neither accepted nor
 * counted as buffered (so no flush can commit part of a group), until the record ending the group arrives; the whole
 * group is then accepted at once. An open group is as large as its producer makes it: it is not bounded by
 * {@code batch.size}. Closing or reopening the partition drops it; the consumer re-reads it from the committed offset.
 */
final class RecordBuffer {
    /** How soon to look again while records wait for the replica's watermark. */
    private static final long HOLD_RECHECK_MS = 100L;
    private static final long NOT_BUFFERING = Long.MIN_VALUE;

    private final int batchSize;
    private final long lingerMs;
    private final Map<TopicPartition, PartitionState> partitions = new LinkedHashMap<>();
    /** The header ending a group; null when records are accepted one by one. */
    private final String groupHeader;
    /** Per partition, the records after its last group end, in offset order: not accepted yet. */
    private final Map<TopicPartition, List<SinkRecord>> openGroups = new HashMap<>();
    /** Records in open groups, over all partitions; volatile as {@link #bufferedRecords}. */
    private volatile int openGroupRecords;
    /** Volatile: also read by the metrics reporter's thread. */
    private volatile int bufferedRecords;
    /** When the buffer last went from empty to not ({@link #recount}). */
    private long bufferedSinceNanos = NOT_BUFFERING;
    /** Records waiting for the replica's watermark, over all partitions; volatile as {@link #bufferedRecords}. */
    private volatile int heldRecords;

    RecordBuffer(int batchSize, long lingerMs) {
        this(batchSize, lingerMs, null);
    }

    /** With {@code groupHeader} (null for none): records are accepted only in whole groups, each ended by that header. */
    RecordBuffer(int batchSize, long lingerMs, String groupHeader) {
        this.batchSize = batchSize;
        this.lingerMs = lingerMs;
        this.groupHeader = groupHeader;
    }

    /** A partition just taken over under {@code epoch}, whose target holds everything before {@code committedNext}. */
    void open(TopicPartition tp, long epoch, long committedNext) {
        partitions.put(tp, new PartitionState(tp, epoch, committedNext));
        // The consumer is rewound to the committed offset: an open group from before is read again.
        openGroups.remove(tp);
        countOpen();
    }

    /** The state of the record's partition, or null when this task does not hold it. */
    PartitionState stateOf(SinkRecord r) {
        return partitions.get(PartitionState.partitionOf(r));
    }

    Collection<PartitionState> partitions() {
        return partitions.values();
    }

    /**
     * Takes the records of one {@code put}: each new one of a partition this task holds is buffered, or offered to
     * the enrichment when there is one (null if not), which is then asked again for the records it holds.
     */
    void add(Collection<SinkRecord> records, EnrichmentStage enrichment, SinkTaskContext context) {
        long receivedAt = enrichment == null ? 0 : enrichment.receivedNow();
        for (SinkRecord r : records) {
            PartitionState state = stateOf(r);
            // Connect delivers only assigned partitions; a record of a closed one must not be written.
            if (state == null || !state.isNew(r)) {
                continue;
            }
            if (groupHeader == null) {
                take(state, r, enrichment, receivedAt);
                continue;
            }
            List<SinkRecord> open = openGroups.computeIfAbsent(state.partition(), tp -> new ArrayList<>());
            if (!open.isEmpty() && r.originalKafkaOffset() <= open.get(open.size() - 1).originalKafkaOffset()) {
                continue; // a re-delivery of a record of the open group
            }
            open.add(r);
            if (endsGroup(r, groupHeader)) {
                for (SinkRecord g : open) {
                    take(state, g, enrichment, receivedAt);
                }
                open.clear();
            }
        }
        if (groupHeader != null) {
            countOpen();
        }
        if (enrichment != null) {
            for (PartitionState state : partitions.values()) {
                enrichment.retry(state, context);
            }
            countHeld();
        }
    }

    private static void take(PartitionState state, SinkRecord r, EnrichmentStage enrichment, long receivedAt) {
        if (enrichment != null) {
            enrichment.offer(state, r, receivedAt);
        } else {
            state.accept(r);
        }
    }

    /** Whether the record carries {@code header} with the value true (a boolean, or the text "true" in any case). */
    static boolean endsGroup(SinkRecord r, String header) {
        Header h = r.headers().lastWithName(header);
        if (h == null) {
            return false;
        }
        Object v = h.value();
        if (v instanceof byte[] bytes) {
            v = new String(bytes, StandardCharsets.UTF_8);
        }
        return Boolean.TRUE.equals(v) || v instanceof String text && text.trim().equalsIgnoreCase("true");
    }

    /**
     * Counts the buffered records and notes when the buffer last went from empty to not: the start of its
     * linger ({@code batch.linger.ms}).
     */
    void recount(long now) {
        bufferedRecords = partitions.values().stream().mapToInt(s -> s.buffered().size()).sum();
        if (bufferedRecords == 0) {
            bufferedSinceNanos = NOT_BUFFERING;
        } else if (bufferedSinceNanos == NOT_BUFFERING) {
            bufferedSinceNanos = now;
        }
    }

    /** Whether the buffer, as last counted, is to be written now: it is full, or has lingered long enough. */
    boolean due(long now) {
        return bufferedRecords >= batchSize || lingerLeftMs(now) == 0;
    }

    /** Milliseconds (at least 1) until the buffer has lingered long enough to be written; 0 when it has; -1 when empty. */
    private long lingerLeftMs(long now) {
        if (bufferedSinceNanos == NOT_BUFFERING) {
            return -1;
        }
        long left = lingerMs - TimeUnit.NANOSECONDS.toMillis(now - bufferedSinceNanos);
        return left <= 0 ? 0 : left;
    }

    /**
     * How soon the buffer wants another look, in milliseconds: at the end of its linger, or soon while records wait
     * for the replica's watermark; {@link Long#MAX_VALUE} when neither.
     */
    long nextLookMs(long now) {
        long recheckMs = heldRecords > 0 ? HOLD_RECHECK_MS : Long.MAX_VALUE;
        long lingerLeft = lingerLeftMs(now);
        if (lingerLeft > 0) {
            recheckMs = Math.min(recheckMs, lingerLeft);
        }
        return recheckMs;
    }

    /** Whether a partition has records accepted (written or skipped) since its last commit. */
    boolean hasUncommitted() {
        return partitions.values().stream().anyMatch(PartitionState::hasUncommitted);
    }

    int bufferedRecords() {
        return bufferedRecords;
    }

    int heldRecords() {
        return heldRecords;
    }

    /** Records waiting for the end of their group, not accepted yet. */
    int openGroupRecords() {
        return openGroupRecords;
    }

    /** Records waiting for the end of their group in these partitions. */
    int openGroupRecords(Collection<TopicPartition> tps) {
        return tps.stream().mapToInt(tp -> openGroups.getOrDefault(tp, List.of()).size()).sum();
    }

    private void countOpen() {
        openGroupRecords = openGroups.values().stream().mapToInt(List::size).sum();
    }

    /** What the target has committed, per partition that has a commit; never more. */
    Map<TopicPartition, OffsetAndMetadata> committedOffsets() {
        Map<TopicPartition, OffsetAndMetadata> committed = new HashMap<>();
        for (PartitionState s : partitions.values()) {
            if (s.committedNext() != OffsetStore.NO_OFFSET) {
                committed.put(s.partition(), new OffsetAndMetadata(s.committedNext()));
            }
        }
        return committed;
    }

    /** Forgets these partitions and the records they hold; returns the states removed, as they were. */
    List<PartitionState> remove(Collection<TopicPartition> revoked, long now) {
        List<PartitionState> removed = new ArrayList<>();
        for (TopicPartition tp : revoked) {
            PartitionState s = partitions.remove(tp);
            if (s != null) {
                removed.add(s);
            }
            openGroups.remove(tp);
        }
        recount(now);
        countHeld();
        countOpen();
        return removed;
    }

    /** Counts the records the enrichment holds back, over the partitions still held. */
    private void countHeld() {
        heldRecords = partitions.values().stream().mapToInt(s -> s.held().size()).sum();
    }

    void clear() {
        partitions.clear();
        openGroups.clear();
        openGroupRecords = 0;
        bufferedRecords = 0;
        bufferedSinceNanos = NOT_BUFFERING;
        heldRecords = 0;
    }
}
