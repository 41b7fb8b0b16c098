package io.asofconnect.replica;

import io.asofconnect.replica.capture.BatchApplier;
import io.asofconnect.replica.capture.OffsetCodec;
import io.asofconnect.store.VersionStore;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import org.apache.kafka.connect.source.SourceRecord;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Hands batches to a {@link BatchApplier} as Debezium's engine does, and keeps the records the applier marks
 * processed (those the engine may then confirm to the server), in the order it marks them.
 */
final class AppliedBatches {
    private final List<SourceRecord> marked = new ArrayList<>();
    private final DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer = new DebeziumEngine.RecordCommitter<>() {
        @Override
        public void markProcessed(RecordChangeEvent<SourceRecord> record) {
            marked.add(record.record());
        }

        @Override
        public void markBatchFinished() {
        }

        @Override
        public void markProcessed(RecordChangeEvent<SourceRecord> record, DebeziumEngine.Offsets sourceOffsets) {
            marked.add(record.record());
        }

        @Override
        public DebeziumEngine.Offsets buildOffsets() {
            throw new UnsupportedOperationException();
        }
    };

    /** Applies {@code records} as one batch. */
    void apply(BatchApplier applier, List<SourceRecord> records) throws InterruptedException {
        List<RecordChangeEvent<SourceRecord>> batch = new ArrayList<>();
        for (SourceRecord r : records) {
            batch.add(() -> r);
        }
        applier.handleBatch(batch, committer);
    }

    /** The records marked processed so far. */
    List<SourceRecord> marked() {
        return List.copyOf(marked);
    }

    /** Forgets the records marked so far, as an engine restarted from the store would not know them. */
    void forgetMarked() {
        marked.clear();
    }

    /** The LSN of the one offset {@code store} holds. */
    static long storedLsn(VersionStore store, OffsetCodec codec) {
        assertThat(store.offsets()).hasSize(1);
        return ((Number) codec.decodeValue(store.offsets().values().iterator().next()).get("lsn")).longValue();
    }
}
