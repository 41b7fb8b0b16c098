package io.asofconnect.windowjoin;

import io.asofconnect.common.config.PluginVersion;
import io.asofconnect.common.logging.LogContext;
import io.asofconnect.windowjoin.state.Side;
import io.asofconnect.writer.ExactlyOnceWriter;
import io.asofconnect.writer.SqlErrors;
import io.asofconnect.writer.WriterMetrics;
import io.asofconnect.writer.config.JdbcUrlValidator;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The stream-stream window join: two co-partitioned topics joined within a time window, inner, left, right or full
 * outer, written to a Postgres table with an exactly-once effect ({@link WindowJoinSinkTask}). Validation and start
 * check that the inputs are co-partitioned: a restart from the config topic does not validate again.
 */
public class WindowJoinSinkConnector extends SinkConnector {
    private static final Logger log = LoggerFactory.getLogger(WindowJoinSinkConnector.class);

    private Map<String, String> props;

    @Override
    public String version() {
        return PluginVersion.VERSION;
    }

    @Override
    public void start(Map<String, String> props) {
        JoinConfig config = new JoinConfig(props);
        JdbcUrlValidator.warnIfWeakTls(config.writer().connectionUrl(), log, LogContext.current(config.connectorName()));
        Map<String, String> assignment = CoPartitioning.assignmentProblems(props);
        if (!assignment.isEmpty()) {
            throw new ConnectException(assignment.values().iterator().next());
        }
        String topics = CoPartitioning.topicProblem(config.adminProperties(), config.topic(Side.LEFT), config.topic(Side.RIGHT));
        if (topics != null) {
            throw new ConnectException(topics);
        }
        this.props = Map.copyOf(props);
        log.info("Started window join connector {}", config.connectorName());
    }

    @Override
    public Class<? extends Task> taskClass() {
        return WindowJoinSinkTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        return PluginVersion.sameConfigForEachTask(props, maxTasks);
    }

    @Override
    public void stop() {
        log.info("Stopped window join connector {}", props == null ? "(not started)" : props.get(JoinConfig.CONNECTOR_NAME));
    }

    @Override
    public ConfigDef config() {
        return JoinConfig.CONFIG_DEF;
    }

    /** The ConfigDef's checks, then those of more than one key, then co-partitioning; each on the key to change. */
    @Override
    public Config validate(Map<String, String> connectorConfigs) {
        Config config = super.validate(connectorConfigs);
        Map<String, ConfigValue> byName = new HashMap<>();
        for (ConfigValue v : config.configValues()) {
            byName.put(v.name(), v);
        }
        if (byName.values().stream().anyMatch(v -> !v.errorMessages().isEmpty())) {
            return config;
        }
        JoinConfig parsed;
        try {
            parsed = new JoinConfig(connectorConfigs);
        } catch (ConfigException e) {
            report(byName, JoinConfig.LEFT_TOPIC, e.getMessage());
            return config;
        }
        CoPartitioning.assignmentProblems(connectorConfigs).forEach((k, m) -> report(byName, k, m));
        String topics = CoPartitioning.topicProblem(parsed.adminProperties(), parsed.topic(Side.LEFT), parsed.topic(Side.RIGHT));
        if (topics != null) {
            report(byName, JoinConfig.RIGHT_TOPIC, topics);
        }
        return config;
    }

    private static void report(Map<String, ConfigValue> byName, String key, String message) {
        ConfigValue v = byName.get(key);
        (v == null ? byName.get(JoinConfig.LEFT_TOPIC) : v).addErrorMessage(message);
    }

    /**
     * REST {@code PATCH}/{@code DELETE .../offsets} (connector stopped) change the offsets table and the held table
     * together: the windows are then rebuilt from the new offsets, with no watermark and no late records.
     */
    @Override
    public boolean alterOffsets(Map<String, String> connectorConfig, Map<TopicPartition, Long> offsets) {
        JoinConfig config = new JoinConfig(connectorConfig);
        HeldTables held = new HeldTables(config.writer().tableSchema(), config.heldTable(), config.lateTable(),
                config.connectorName(), tp -> null);
        try (ExactlyOnceWriter writer = ExactlyOnceWriter.create(config.writerSettings(),
                "asof-connect window join " + config.connectorName() + " (offsets)", WriterMetrics.NONE, held)) {
            writer.overwriteOffsets(offsets);
        } catch (SQLException e) {
            throw new ConnectException("changing the offsets of " + config.connectorName() + " failed (" + SqlErrors.describe(e)
                    + "); nothing was changed. Check that the target is reachable and the user may write its tables");
        }
        log.info("Set the offsets of {} partitions of window join {}", offsets.size(), config.connectorName());
        return true;
    }
}
