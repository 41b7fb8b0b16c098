package io.asofconnect.replica.capture;

import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.json.JsonConverterConfig;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Map;

/**
 * Serializes source offsets exactly as the embedded engine's {@code OffsetStorageWriter} does, so that
 * offsets we commit with the versions are found by the engine's {@code OffsetStorageReader} on restart:
 * a {@link JsonConverter} without schemas; the key is {@code [engineName, partition]}, the value the
 * offset map (Kafka's {@code OffsetStorageWriter#doFlush}).
 */
public final class OffsetCodec {
    private final String engineName;
    private final JsonConverter keys = new JsonConverter();
    private final JsonConverter values = new JsonConverter();

    public OffsetCodec(String engineName) {
        this.engineName = engineName;
        Map<String, String> conf = Map.of(JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false");
        keys.configure(conf, true);
        values.configure(conf, false);
    }

    public ByteBuffer key(Map<String, ?> partition) {
        return ByteBuffer.wrap(keys.fromConnectData(engineName, null, Arrays.asList(engineName, partition)));
    }

    public ByteBuffer value(Map<String, ?> offset) {
        return ByteBuffer.wrap(values.fromConnectData(engineName, null, offset));
    }

    /** The offset map stored under a value, or null. */
    public Map<?, ?> decodeValue(ByteBuffer value) {
        ByteBuffer dup = value.duplicate();
        byte[] bytes = new byte[dup.remaining()];
        dup.get(bytes);
        Object v = values.toConnectData(engineName, bytes).value();
        return v instanceof Map<?, ?> m ? m : null;
    }
}
