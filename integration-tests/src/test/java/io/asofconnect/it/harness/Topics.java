package io.asofconnect.it.harness;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.awaitility.Awaitility;

/** Reads a whole topic from the start, e.g. a dead letter queue, and its records' headers as text. */
public final class Topics {

    /** Once the expected records are in, how long more is read: an extra record would be a duplicate. */
    private static final Duration SETTLE = Duration.ofSeconds(2);

    private Topics() {
    }

    /** Every record of {@code topic}, waiting (bounded) for at least {@code atLeast}, then reading a little longer. */
    public static List<ConsumerRecord<byte[], byte[]>> readAll(KafkaBroker broker, String topic, int atLeast,
                                                               Duration timeout) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "it-reader-" + topic + "-" + UUID.randomUUID());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            Awaitility.await(atLeast + " records on " + topic).atMost(timeout).pollInterval(Duration.ofMillis(10))
                    .until(() -> {
                        consumer.poll(Duration.ofMillis(500)).forEach(records::add);
                        return records.size() >= atLeast;
                    });
            consumer.poll(SETTLE).forEach(records::add);
        }
        return records;
    }

    /** Header name to value as UTF-8 text; for a repeated name the last one counts. */
    public static Map<String, String> headers(ConsumerRecord<byte[], byte[]> record) {
        Map<String, String> headers = new LinkedHashMap<>();
        for (Header h : record.headers()) {
            headers.put(h.key(), h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8));
        }
        return headers;
    }
}
