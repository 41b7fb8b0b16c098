package io.asofconnect.it.harness;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Produces records in the JsonConverter envelope ({@code {"schema":..., "payload":...}}) with explicit
 * record timestamps, so tests control event time; also raw bytes for malformed input.
 */
public final class JsonEvents implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final KafkaProducer<byte[], byte[]> producer;

    public JsonEvents(KafkaBroker broker) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        producer = new KafkaProducer<>(p);
    }

    /** A struct schema of optional-free fields, e.g. {@code field("id","int64")}. */
    public static ObjectNode structSchema(String name, Map<String, String> fieldTypes) {
        ObjectNode schema = JSON.createObjectNode();
        schema.put("type", "struct");
        schema.put("optional", false);
        schema.put("name", name);
        ArrayNode fields = schema.putArray("fields");
        fieldTypes.forEach((field, type) -> {
            ObjectNode f = fields.addObject();
            f.put("field", field);
            f.put("type", type);
            f.put("optional", false);
        });
        return schema;
    }

    public static byte[] envelope(ObjectNode schema, ObjectNode payload) {
        ObjectNode root = JSON.createObjectNode();
        root.set("schema", schema);
        root.set("payload", payload);
        try {
            return JSON.writeValueAsBytes(root);
        } catch (Exception e) {
            throw new IllegalArgumentException("Cannot serialise an event", e);
        }
    }

    public static byte[] int64Key(long key) {
        return ("{\"schema\":{\"type\":\"int64\",\"optional\":false},\"payload\":" + key + "}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** A key in the JsonConverter envelope with a {@code string} schema; equal keys give equal bytes. */
    public static byte[] stringKey(String key) {
        ObjectNode root = JSON.createObjectNode();
        root.putObject("schema").put("type", "string").put("optional", false);
        root.put("payload", key);
        try {
            return JSON.writeValueAsBytes(root);
        } catch (Exception e) {
            throw new IllegalArgumentException("Cannot serialise a key", e);
        }
    }

    public static ObjectNode payload() {
        return JSON.createObjectNode();
    }

    public RecordMetadata send(String topic, Integer partition, long timestamp, byte[] key, byte[] value) {
        Future<RecordMetadata> sent = producer.send(new ProducerRecord<>(topic, partition, timestamp, key, value));
        try {
            return sent.get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while producing to " + topic, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("Could not produce to " + topic, e);
        }
    }

    /**
     * Sends without waiting for each acknowledgement; {@link #flush()} before relying on them. The future gives the
     * partition and offset the record got (with a null {@code partition}, the default partitioner's choice).
     */
    public Future<RecordMetadata> sendAsync(String topic, Integer partition, long timestamp, byte[] key, byte[] value) {
        return producer.send(new ProducerRecord<>(topic, partition, timestamp, key, value));
    }

    public void sendAll(List<ProducerRecord<byte[], byte[]>> records) {
        records.forEach(producer::send);
        flush();
    }

    public void flush() {
        producer.flush();
    }

    @Override
    public void close() {
        producer.close();
    }
}
