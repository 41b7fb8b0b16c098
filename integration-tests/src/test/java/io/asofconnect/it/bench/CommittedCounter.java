package io.asofconnect.it.bench;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Counts the records of a topic a {@code read_committed} consumer can see, from the beginning of every partition,
 * on a thread of its own that polls without pause: what "visible" means for an exactly-once Kafka Streams output
 * (records of open or aborted transactions are not counted). {@link #reachedAt} is the {@link System#nanoTime()}
 * right after the poll that brought the count to a target, set by that thread.
 */
final class CommittedCounter implements AutoCloseable {
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final Thread thread;
    private final AtomicLong count = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final long target;
    private volatile long reachedAt;
    private volatile boolean stop;

    CommittedCounter(String bootstrap, String topic, int partitions, long target) {
        this.target = target;
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        consumer = new KafkaConsumer<>(p);
        List<TopicPartition> tps = IntStream.range(0, partitions).mapToObj(i -> new TopicPartition(topic, i)).toList();
        consumer.assign(tps);
        consumer.seekToBeginning(tps);
        thread = new Thread(this::loop, "count-" + topic);
        thread.setDaemon(true);
        thread.start();
    }

    private void loop() {
        try {
            while (!stop) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                long now = System.nanoTime();
                if (!records.isEmpty() && count.addAndGet(records.count()) >= target && reachedAt == 0) {
                    reachedAt = now;
                }
            }
        } catch (WakeupException e) {
            // closing
        } catch (Throwable t) {
            failure.set(t);
        }
    }

    long count() {
        Throwable t = failure.get();
        if (t != null) {
            throw new IllegalStateException("the counting consumer failed", t);
        }
        return count.get();
    }

    /** 0 until the count has reached the target. */
    long reachedAt() {
        count();
        return reachedAt;
    }

    @Override
    public void close() {
        stop = true;
        consumer.wakeup();
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        consumer.close();
    }
}
