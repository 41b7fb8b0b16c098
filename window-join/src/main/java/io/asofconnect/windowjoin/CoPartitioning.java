package io.asofconnect.windowjoin;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The join needs partition p of both inputs in one task, holding the same keys. Equal partition counts and Connect's
 * default range assignor give the first (Range hands partition p of every subscribed topic to the same consumer); the
 * second is the producers' duty (same key bytes, same partitioner) and cannot be read from metadata. Compacted inputs
 * are refused too: compaction would change what a replay reads.
 */
final class CoPartitioning {
    static final String ASSIGNOR_OVERRIDE = "consumer.override.partition.assignment.strategy";
    static final String GROUP_PROTOCOL_OVERRIDE = "consumer.override.group.protocol";
    static final String REMOTE_ASSIGNOR_OVERRIDE = "consumer.override.group.remote.assignor";
    private static final long TIMEOUT_MS = 30_000L;

    private CoPartitioning() {
    }

    /** Problems with the consumer overrides, by key; none when the defaults are kept. */
    static Map<String, String> assignmentProblems(Map<String, String> props) {
        Map<String, String> p = new HashMap<>();
        String assignor = props.get(ASSIGNOR_OVERRIDE);
        if (assignor != null && !assignor.isBlank()) {
            List<String> names = List.of(assignor.split(",")).stream().map(String::trim).filter(s -> !s.isEmpty()).toList();
            if (!(names.size() == 1 && (names.get(0).equals(RangeAssignor.class.getName()) || names.get(0).equals("range")))) {
                p.put(JoinConfig.LEFT_TOPIC, ASSIGNOR_OVERRIDE + "=" + assignor + " may give partition p of the two topics to"
                        + " different tasks; the join needs " + RangeAssignor.class.getName() + ": remove the override");
            }
        }
        if ("consumer".equalsIgnoreCase(props.get(GROUP_PROTOCOL_OVERRIDE)) && !"range".equals(props.get(REMOTE_ASSIGNOR_OVERRIDE))) {
            p.put(JoinConfig.LEFT_TOPIC, GROUP_PROTOCOL_OVERRIDE + "=consumer needs " + REMOTE_ASSIGNOR_OVERRIDE + "=range, so that"
                    + " partition p of both topics goes to the same task");
        }
        return p;
    }

    /** What is wrong with the two topics, or null: missing, different partition counts, or compacted. */
    static String topicProblem(Map<String, Object> adminProps, String left, String right) {
        try (Admin admin = Admin.create(adminProps)) {
            Map<String, TopicDescription> topics = admin.describeTopics(List.of(left, right)).allTopicNames()
                    .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            int l = topics.get(left).partitions().size();
            int r = topics.get(right).partitions().size();
            if (l != r) {
                return "the inputs are not co-partitioned: " + left + " has " + l + " partitions and " + right + " has " + r
                        + "; the join needs partition p of both in the same task with the same keys. Give both topics the"
                        + " same partition count (repartition one of them into a new topic) and key both alike";
            }
            List<ConfigResource> resources = new ArrayList<>();
            resources.add(new ConfigResource(ConfigResource.Type.TOPIC, left));
            resources.add(new ConfigResource(ConfigResource.Type.TOPIC, right));
            Map<ConfigResource, Config> configs = admin.describeConfigs(resources).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            for (Map.Entry<ConfigResource, Config> e : configs.entrySet()) {
                ConfigEntry policy = e.getValue().get("cleanup.policy");
                if (policy != null && policy.value() != null && policy.value().contains("compact")) {
                    return "topic " + e.getKey().name() + " has cleanup.policy=" + policy.value() + ": compaction would change"
                            + " what a rebuild replays. Join topics with cleanup.policy=delete";
                }
            }
            return null;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                return "topic " + left + " or " + right + " does not exist: create both, with the same partition count";
            }
            return "could not describe the topics " + left + " and " + right + " through " + JoinConfig.ADMIN_BOOTSTRAP + " ("
                    + e.getCause() + "); check the bootstrap servers and the join.admin.* security options";
        } catch (TimeoutException e) {
            return "could not reach the Kafka cluster through " + JoinConfig.ADMIN_BOOTSTRAP + "=" + adminProps.get("bootstrap.servers")
                    + " within " + TIMEOUT_MS / 1000 + " s to check that the inputs are co-partitioned";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while checking that the inputs are co-partitioned";
        }
    }
}
