package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.replica.capture.ChangeEventMapper;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.StoreOptions;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** An unchanged TOASTed column takes the value of the change before it in the source, not of the greatest valid-from. */
class ToastFillTest {
    private static final Schema KEY = SchemaBuilder.struct().name("k").field("id", Schema.INT32_SCHEMA).build();
    private static final Schema ROW = SchemaBuilder.struct().name("row").field("id", Schema.INT32_SCHEMA)
            .field("doc", Schema.OPTIONAL_STRING_SCHEMA).field("eff", Schema.INT64_SCHEMA).build();
    private static final Schema SOURCE = SchemaBuilder.struct().name("source").field("schema", Schema.STRING_SCHEMA)
            .field("table", Schema.STRING_SCHEMA).field("lsn", Schema.OPTIONAL_INT64_SCHEMA).field("ts_ms", Schema.INT64_SCHEMA)
            .field("snapshot", Schema.OPTIONAL_STRING_SCHEMA).build();
    private static final Schema ENVELOPE = SchemaBuilder.struct().name("env").field("op", Schema.STRING_SCHEMA)
            .field("source", SOURCE).field("after", SchemaBuilder.struct().name("row").field("id", Schema.INT32_SCHEMA)
                    .field("doc", Schema.OPTIONAL_STRING_SCHEMA).field("eff", Schema.INT64_SCHEMA).optional().build()).build();

    @TempDir
    Path dir;

    @Test
    void columnValidFromFillsFromThePrecedingChangeInSourceOrder() {
        Map<String, Object> p = new HashMap<>();
        p.put(ReplicaConfig.NAME, "toast");
        p.put(ReplicaConfig.VALID_FROM, "COLUMN");
        p.put(ReplicaConfig.VALID_FROM_COLUMN, "eff");
        ChangeEventMapper mapper = new ChangeEventMapper(new ReplicaConfig(p));
        try (MapDbVersionStore store = MapDbVersionStore.open(dir.resolve("toast.mapdb"), StoreOptions.defaults())) {
            // Source order: lsn 100 valid from 5000 ("future"), then lsn 200 back-dated to 1000 ("backdated").
            store.put("public.t", RowKey.of(1), new Version(5000, new SourcePosition(100, 0), row("future", 5000)));
            store.put("public.t", RowKey.of(1), new Version(1000, new SourcePosition(200, 0), row("backdated", 1000)));
            store.commit();

            SourceRecord update = record(300, "__debezium_unavailable_value", 3000);
            ChangeEventMapper.Change c = mapper.map(update, ChangeEventMapper.key(update), 0, store);
            assertThat(c.version().row().getString("doc")).as("the change at lsn 200 precedes lsn 300").isEqualTo("backdated");
            assertThat(c.version().validFrom()).isEqualTo(3000);
            assertThat(c.version().position()).isEqualTo(new SourcePosition(300, 0));

            // A replay of the change at lsn 200 fills from lsn 100, never from itself.
            SourceRecord replay = record(200, "__debezium_unavailable_value", 1000);
            assertThat(mapper.map(replay, ChangeEventMapper.key(replay), 0, store).version().row().getString("doc")).isEqualTo("future");
        }
    }

    private static Struct row(String doc, long eff) {
        return new Struct(ROW).put("id", 1).put("doc", doc).put("eff", eff);
    }

    private static SourceRecord record(long lsn, String doc, long eff) {
        Struct after = new Struct(ENVELOPE.field("after").schema()).put("id", 1).put("doc", doc).put("eff", eff);
        Struct source = new Struct(SOURCE).put("schema", "public").put("table", "t").put("lsn", lsn).put("ts_ms", 9999L)
                .put("snapshot", "false");
        Struct value = new Struct(ENVELOPE).put("op", "u").put("source", source).put("after", after);
        return new SourceRecord(Map.of(), Map.of(), "t", null, KEY, new Struct(KEY).put("id", 1), ENVELOPE, value);
    }
}
