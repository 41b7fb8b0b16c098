package io.asofconnect.replica.capture;

import io.debezium.engine.RecordChangeEvent;
import org.apache.kafka.connect.source.SourceRecord;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the batches applied since the last store commit still owe it: the records to report processed once
 * the commit holds them, the last settled offset of each source partition, the watermark their probes
 * reached and the snapshot's latest read. Their versions are already in the store, uncommitted.
 */
final class PendingCommit {
    private final List<RecordChangeEvent<SourceRecord>> settled = new ArrayList<>();
    private final Map<Map<String, ?>, Map<String, ?>> offsets = new LinkedHashMap<>();
    private Map<String, ?> partition;
    private Map<String, ?> offset;
    /** Records received since the last commit, held back ones included. */
    long records;
    long watermark = Long.MIN_VALUE;
    /** The greatest token of this replica's own probes since the last commit (WatermarkTracker#advanceReceiptsTo). */
    long receiptToken = Long.MIN_VALUE;
    long snapshotRead = Long.MIN_VALUE;
    /** The LSN of the snapshot rows applied since the last commit, or null when none were. */
    Long snapshotLsn;

    /** A record whose offset the commit may store, and which is reported processed after it. */
    void settle(RecordChangeEvent<SourceRecord> event) {
        settled.add(event);
        SourceRecord r = event.record();
        Map<String, ?> p = r.sourcePartition();
        Map<String, ?> o = r.sourceOffset();
        if (p == null || o == null) {
            return;
        }
        // Nearly every record has the same partition as the one before: no map operation per record then.
        if (p == partition || p.equals(partition)) {
            offset = o;
            return;
        }
        flushCurrent();
        partition = p;
        offset = o;
    }

    /** The last settled offset per partition, in the order the partitions were first seen. */
    Map<Map<String, ?>, Map<String, ?>> offsets() {
        flushCurrent();
        return offsets;
    }

    List<RecordChangeEvent<SourceRecord>> settled() {
        return settled;
    }

    boolean isEmpty() {
        return records == 0;
    }

    void clear() {
        settled.clear();
        offsets.clear();
        partition = null;
        offset = null;
        records = 0;
        watermark = Long.MIN_VALUE;
        receiptToken = Long.MIN_VALUE;
        snapshotRead = Long.MIN_VALUE;
        snapshotLsn = null;
    }

    private void flushCurrent() {
        if (partition != null) {
            offsets.put(partition, offset);
        }
    }
}
