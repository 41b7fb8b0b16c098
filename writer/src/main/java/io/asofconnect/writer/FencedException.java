package io.asofconnect.writer;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;

/** Another task took a partition over (a higher epoch in the offsets table): this task must write nothing more. */
public final class FencedException extends ConnectException {
    FencedException(TopicPartition tp, long currentEpoch, long ourEpoch) {
        super("partition " + tp + " was taken over by another task (epoch " + (currentEpoch < 0 ? "unknown" : Long.toString(currentEpoch))
                + ", this task held epoch " + ourEpoch + "); this task stops; nothing was written by its last flush."
                + " This is expected after a rebalance that found this task unresponsive; the new owner continues.");
    }
}
