package io.asofconnect.tablejoin;

import io.asofconnect.common.config.PluginVersion;
import io.asofconnect.replica.config.ReplicaConfig;

import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The table-table join: a view over two tables captured by the replica, maintained incrementally and published as
 * an append, upsert or retract changelog ({@link TableJoinSourceTask}). One task per view: the delta rule needs the
 * changes of both tables in one order. Supports Connect's exactly-once source delivery (KIP-618).
 */
public class TableJoinSourceConnector extends SourceConnector {
    private static final Logger log = LoggerFactory.getLogger(TableJoinSourceConnector.class);

    private Map<String, String> props;

    @Override
    public String version() {
        return PluginVersion.VERSION;
    }

    @Override
    public void start(Map<String, String> props) {
        TableJoinConfig config = new TableJoinConfig(props);
        Map<String, List<String>> problems = ViewChecks.problems(config, new ReplicaConfig(ReplicaSettings.forView(props, config.view())));
        if (!problems.isEmpty()) {
            Map.Entry<String, List<String>> first = problems.entrySet().iterator().next();
            throw new ConnectException("view " + config.viewName() + ": " + first.getKey() + ": " + first.getValue().get(0));
        }
        this.props = Map.copyOf(props);
        log.info("Started table join connector {}", config.viewName());
    }

    @Override
    public Class<? extends Task> taskClass() {
        return TableJoinSourceTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        return PluginVersion.sameConfigForEachTask(props, 1);
    }

    @Override
    public void stop() {
        log.info("Stopped table join connector {}", props == null ? "" : props.get(TableJoinConfig.CONNECTOR_NAME));
    }

    @Override
    public ConfigDef config() {
        return TableJoinConfig.CONFIG_DEF;
    }

    @Override
    public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> connectorConfig) {
        return ExactlyOnceSupport.SUPPORTED;
    }

    @Override
    public Config validate(Map<String, String> connectorConfigs) {
        Config result = super.validate(connectorConfigs);
        if (result.configValues().stream().anyMatch(v -> !v.errorMessages().isEmpty())) {
            return result;
        }
        try {
            TableJoinConfig config = new TableJoinConfig(connectorConfigs);
            ReplicaConfig replica = new ReplicaConfig(ReplicaSettings.forView(connectorConfigs, config.view()));
            ViewChecks.problems(config, replica).forEach((key, messages) -> {
                ConfigValue value = result.configValues().stream().filter(v -> v.name().equals(key)).findFirst().orElse(null);
                if (value != null) {
                    messages.forEach(value::addErrorMessage);
                }
            });
        } catch (ConfigException e) {
            ConfigValue value = result.configValues().stream().filter(v -> e.getMessage().contains(v.name())).findFirst()
                    .orElse(result.configValues().get(0));
            value.addErrorMessage(e.getMessage());
        }
        return result;
    }
}
