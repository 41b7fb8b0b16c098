package io.asofconnect.windowjoin;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.record.EventTimes;
import io.asofconnect.common.record.KeyExtractor;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.sink.SinkRecord;

/** Reads what the join needs from one side's records: the value (a struct), the event time and the join key. */
final class SideReader {
    /** A record as the join sees it; {@code key} is null when the record has no join key. */
    record Read(byte[] key, long time, Struct value) {
    }

    private final KeyExtractor keys;
    private final EventTimes times;
    private final String topic;

    SideReader(KeyExtractor keys, EventTimes times, String topic) {
        this.keys = keys;
        this.times = times;
        this.topic = topic;
    }

    /** @throws DataException naming what is wrong with the record and what to do */
    Read read(SinkRecord r) {
        if (!(r.value() instanceof Struct value)) {
            throw new DataException("the window join needs record values with a schema (a struct), but the record at "
                    + where(r) + " has " + (r.value() == null ? "no value (a tombstone)" : "a " + r.value().getClass().getSimpleName())
                    + "; use a converter with schemas (Avro, Protobuf, JSON Schema, or JsonConverter with schemas.enable=true)");
        }
        long time = times.of(r);
        RowKey key = keys.of(r);
        return new Read(key == null ? null : key.encoded(), time, value);
    }

    String where(SinkRecord r) {
        return topic + "-" + r.originalKafkaPartition() + "@" + r.originalKafkaOffset();
    }
}
