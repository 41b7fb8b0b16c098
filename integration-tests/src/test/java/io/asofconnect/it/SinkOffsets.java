package io.asofconnect.it;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * The three views of where one sink connector stands on one topic, per partition: the next offset in the target's
 * offsets table (the one that counts), the consumer group's committed offset, and the topic's log-end offset.
 * The topics of these tests hold data records only (no transactions), so "everything applied" means the offsets
 * row equals the log-end offset.
 */
final class SinkOffsets {

    private static final String OFFSETS_TABLE = "asof_connect_offsets";
    private static final long ADMIN_TIMEOUT_S = 30;

    private final PostgresServer postgres;
    private final KafkaBroker broker;
    private final String targetDb;
    private final String connector;
    private final String topic;
    private final int partitions;

    SinkOffsets(PostgresServer postgres, KafkaBroker broker, String targetDb, String connector, String topic,
                int partitions) {
        this.postgres = postgres;
        this.broker = broker;
        this.targetDb = targetDb;
        this.connector = connector;
        this.topic = topic;
        this.partitions = partitions;
    }

    /** Connect's default group of a sink connector: {@code connect-NAME}. */
    String groupId() {
        return "connect-" + connector;
    }

    TopicPartition partition(int p) {
        return new TopicPartition(topic, p);
    }

    /** Partition -> next_offset of the target's offsets table; partitions without a row are absent. */
    Map<Integer, Long> inTarget() throws SQLException {
        Map<Integer, Long> next = new TreeMap<>();
        try (Connection c = postgres.connect(targetDb); PreparedStatement ps = c.prepareStatement(
                "SELECT \"kafka_partition\", \"next_offset\" FROM " + PostgresServer.quoteIdentifier(OFFSETS_TABLE)
                        + " WHERE \"connector_name\" = ? AND \"topic\" = ?")) {
            ps.setString(1, connector);
            ps.setString(2, topic);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    next.put(rs.getInt(1), rs.getLong(2));
                }
            }
        }
        return next;
    }

    /** Partition -> log-end offset, for every partition of the topic. */
    Map<Integer, Long> logEnd() {
        Map<TopicPartition, OffsetSpec> latest = IntStream.range(0, partitions).boxed()
                .collect(Collectors.toMap(this::partition, p -> OffsetSpec.latest()));
        try (Admin admin = broker.admin()) {
            return admin.listOffsets(latest).all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS).entrySet().stream()
                    .collect(Collectors.toMap(e -> e.getKey().partition(), e -> e.getValue().offset(),
                            (a, b) -> a, TreeMap::new));
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("Cannot read the log-end offsets of " + topic, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while reading the log-end offsets of " + topic, e);
        }
    }

    /** Partition -> the group's committed offset; partitions without a commit are absent. */
    Map<Integer, Long> inGroup() {
        try (Admin admin = broker.admin()) {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(groupId())
                    .partitionsToOffsetAndMetadata().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            Map<Integer, Long> byPartition = new TreeMap<>();
            committed.forEach((tp, om) -> {
                if (tp.topic().equals(topic) && om != null) {
                    byPartition.put(tp.partition(), om.offset());
                }
            });
            return byPartition;
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("Cannot read the committed offsets of group " + groupId(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while reading the offsets of group " + groupId(), e);
        }
    }

    /** The group coordinator's view of the sink's consumer group (EMPTY once every task has left it). */
    GroupState groupState() {
        try (Admin admin = broker.admin()) {
            KafkaFuture<ConsumerGroupDescription> described = admin.describeConsumerGroups(java.util.List.of(groupId()))
                    .describedGroups().get(groupId());
            return described.get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS).groupState();
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("Cannot describe group " + groupId(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while describing group " + groupId(), e);
        }
    }

    /**
     * Moves only the consumer group (not the target's table) to {@code offsets}, partition -> offset. The broker
     * refuses while the group has members, so the connector must be stopped and its tasks gone.
     */
    void moveGroup(Map<Integer, Long> offsets) {
        Map<TopicPartition, OffsetAndMetadata> moved = offsets.entrySet().stream()
                .collect(Collectors.toMap(e -> partition(e.getKey()), e -> new OffsetAndMetadata(e.getValue())));
        try (Admin admin = broker.admin()) {
            admin.alterConsumerGroupOffsets(groupId(), moved).all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("Cannot move the offsets of group " + groupId(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while moving the offsets of group " + groupId(), e);
        }
    }

    static Map<Integer, Long> map(int partitions, Function<Integer, Long> offsetOf) {
        Map<Integer, Long> m = new TreeMap<>();
        for (int p = 0; p < partitions; p++) {
            m.put(p, offsetOf.apply(p));
        }
        return m;
    }
}
