package io.asofconnect.sink;

import io.asofconnect.common.config.EnumOption;
import io.asofconnect.common.config.PluginVersion;
import io.asofconnect.common.logging.LogContext;
import io.asofconnect.sink.config.ExactlyOnceJdbcSinkConfig;
import io.asofconnect.sink.enrichment.EnrichmentOptions;
import io.asofconnect.writer.ExactlyOnceWriter;
import io.asofconnect.writer.InsertMode;
import io.asofconnect.writer.PrimaryKeyMode;
import io.asofconnect.writer.SqlErrors;
import io.asofconnect.writer.WriterMetrics;
import io.asofconnect.writer.config.JdbcUrlValidator;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.SQLException;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The exactly-once JDBC sink: validates the configuration and hands it to its tasks, which do the work
 * ({@link ExactlyOnceJdbcSinkTask}). Every task gets the same configuration; Connect spreads the
 * partitions, and the offsets table fences a task that lost one.
 */
public class ExactlyOnceJdbcSinkConnector extends SinkConnector {
    private static final Logger log = LoggerFactory.getLogger(ExactlyOnceJdbcSinkConnector.class);

    private Map<String, String> props;

    @Override
    public String version() {
        return PluginVersion.VERSION;
    }

    @Override
    public void start(Map<String, String> props) {
        ExactlyOnceJdbcSinkConfig config = new ExactlyOnceJdbcSinkConfig(props);
        JdbcUrlValidator.warnIfWeakTls(config.connectionUrl(), log, LogContext.current(config.connectorName()));
        this.props = Map.copyOf(props);
        log.info("Started connector {}", config.connectorName());
    }

    @Override
    public Class<? extends Task> taskClass() {
        return ExactlyOnceJdbcSinkTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        return PluginVersion.sameConfigForEachTask(props, maxTasks);
    }

    @Override
    public void stop() {
        log.info("Stopped connector {}", props == null ? "(not started)" : props.get(ExactlyOnceJdbcSinkConfig.CONNECTOR_NAME));
    }

    /**
     * The offsets that count are in the target's offsets table, so REST {@code PATCH}/{@code DELETE .../offsets}
     * (connector stopped) change them there, in one transaction; Connect then moves the consumer group to match.
     */
    @Override
    public boolean alterOffsets(Map<String, String> connectorConfig, Map<TopicPartition, Long> offsets) {
        ExactlyOnceJdbcSinkConfig config = new ExactlyOnceJdbcSinkConfig(connectorConfig);
        try (ExactlyOnceWriter writer = ExactlyOnceWriter.create(config.writerSettings(),
                "asof-connect sink " + config.connectorName() + " (offsets)", WriterMetrics.NONE)) {
            try {
                writer.overwriteOffsets(offsets);
            } catch (SQLException e) {
                throw new ConnectException("changing the offsets in " + writer.offsetsTable() + " failed (" + SqlErrors.describe(e)
                        + "); nothing was changed. Check that the target is reachable and the user may write that table");
            }
            log.info("Set the offsets of {} partitions of connector {} in {}", offsets.size(), config.connectorName(), writer.offsetsTable());
        }
        return true;
    }

    @Override
    public ConfigDef config() {
        return ExactlyOnceJdbcSinkConfig.CONFIG_DEF;
    }

    /** The ConfigDef's checks, then the ones that involve two keys, each reported on the key to change. */
    @Override
    public Config validate(Map<String, String> connectorConfigs) {
        Config config = super.validate(connectorConfigs);
        Map<String, ConfigValue> byName = new java.util.HashMap<>();
        for (ConfigValue v : config.configValues()) {
            byName.put(v.name(), v);
        }
        EnrichmentOptions.problems(connectorConfigs, byName);
        ConfigValue groupHeader = byName.get(ExactlyOnceJdbcSinkConfig.CHANGELOG_GROUP_HEADER);
        if (groupHeader != null && groupHeader.errorMessages().isEmpty() && groupHeader.value() != null) {
            String problem = ExactlyOnceJdbcSinkConfig.groupingProblem(groupHeader.value().toString(), EnrichmentOptions.enabled(connectorConfigs));
            if (problem != null) {
                groupHeader.addErrorMessage(problem);
            }
        }
        if (hasErrors(byName, ExactlyOnceJdbcSinkConfig.INSERT_MODE, ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE,
                ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS, ExactlyOnceJdbcSinkConfig.DELETE_ENABLED,
                ExactlyOnceJdbcSinkConfig.CHANGELOG_OP_FIELD)) {
            return config;
        }
        InsertMode insertMode = EnumOption.of(InsertMode.class).parse(ExactlyOnceJdbcSinkConfig.INSERT_MODE,
                String.valueOf(byName.get(ExactlyOnceJdbcSinkConfig.INSERT_MODE).value()));
        PrimaryKeyMode pkMode = EnumOption.of(PrimaryKeyMode.class).parse(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE,
                String.valueOf(byName.get(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE).value()));
        Object fields = byName.get(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS).value();
        List<String> pkFields = fields instanceof List<?> l
                ? l.stream().map(String::valueOf).map(String::trim).filter(s -> !s.isEmpty()).toList()
                : Collections.emptyList();
        boolean deleteEnabled = Boolean.TRUE.equals(byName.get(ExactlyOnceJdbcSinkConfig.DELETE_ENABLED).value());
        Object opField = byName.get(ExactlyOnceJdbcSinkConfig.CHANGELOG_OP_FIELD).value();
        ExactlyOnceJdbcSinkConfig.crossKeyProblems(insertMode, pkMode, pkFields, deleteEnabled, opField == null ? null : opField.toString())
                .forEach((key, problem) -> byName.get(key).addErrorMessage(problem));
        return config;
    }

    private static boolean hasErrors(Map<String, ConfigValue> byName, String... keys) {
        for (String k : keys) {
            ConfigValue v = byName.get(k);
            if (v == null || !v.errorMessages().isEmpty()) {
                return true;
            }
        }
        return false;
    }
}
