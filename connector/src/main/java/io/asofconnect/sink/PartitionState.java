package io.asofconnect.sink;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.sink.SinkRecord;

import java.util.ArrayList;
import java.util.List;

/**
 * One assigned partition: the epoch this task holds it under, the next offset the target has committed,
 * and the records accepted since, in offset order. Offsets are the record's original Kafka coordinates
 * (before any SMT renamed its topic), since those are what the consumer commits.
 */
final class PartitionState {
    private final TopicPartition tp;
    private final long epoch;
    private long committedNext;
    private final List<SinkRecord> buffer = new ArrayList<>();

    PartitionState(TopicPartition tp, long epoch, long committedNext) {
        this.tp = tp;
        this.epoch = epoch;
        this.committedNext = committedNext;
    }

    static TopicPartition partitionOf(SinkRecord r) {
        return new TopicPartition(r.originalTopic(), r.originalKafkaPartition());
    }

    TopicPartition partition() {
        return tp;
    }

    long epoch() {
        return epoch;
    }

    /** The next offset the target holds, or {@link OffsetStore#NO_OFFSET} before the first commit. */
    long committedNext() {
        return committedNext;
    }

    /** The offset after the last accepted record: what the next flush commits. */
    long targetNext() {
        return buffer.isEmpty() ? committedNext : buffer.get(buffer.size() - 1).originalKafkaOffset() + 1;
    }

    /** Accepts a record unless it is at or before one already committed or buffered (a re-delivery); true if accepted. */
    boolean offer(SinkRecord r) {
        long next = targetNext();
        if (next != OffsetStore.NO_OFFSET && r.originalKafkaOffset() < next) {
            return false;
        }
        buffer.add(r);
        return true;
    }

    List<SinkRecord> buffered() {
        return buffer;
    }

    boolean hasUncommitted() {
        return targetNext() != committedNext;
    }

    /** The target now holds everything before {@code next}: those records leave the buffer. */
    void committed(long next) {
        committedNext = next;
        buffer.removeIf(r -> r.originalKafkaOffset() < next);
    }
}
