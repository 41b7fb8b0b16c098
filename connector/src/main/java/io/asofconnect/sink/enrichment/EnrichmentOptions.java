package io.asofconnect.sink.enrichment;

import io.asofconnect.enrich.EnrichConfig;
import io.asofconnect.replica.config.ReplicaConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.ConfigKey;
import org.apache.kafka.common.config.ConfigValue;

import java.util.Map;

/**
 * The {@code enrich.*} and {@code replica.*} options, the same keys as the {@code AsOfEnrich} transform, in the
 * sink's ConfigDef. Enrichment in the sink is optional, so the keys the transform requires ({@code enrich.table},
 * {@code replica.name}) are optional here; once {@code enrich.table} is set, the transform's own parsing and the
 * checks in {@link #problems} hold them to the transform's rules.
 */
public final class EnrichmentOptions {
    private EnrichmentOptions() {
    }

    public static ConfigDef addTo(ConfigDef def) {
        ConfigDef shared = EnrichConfig.addTo(ReplicaConfig.addTo(new ConfigDef()));
        for (ConfigKey k : shared.configKeys().values()) {
            boolean required = !k.hasDefault();
            String doc = required
                    ? k.documentation + " Required in this sink when " + EnrichConfig.TABLE + " is set (enrichment in the sink is on then)."
                    : k.documentation;
            def.define(new ConfigKey(k.name, k.type, required ? null : k.defaultValue, optional(k.validator), k.importance, doc,
                    k.group, k.orderInGroup, k.width, k.displayName, k.dependents, k.recommender, k.internalConfig));
        }
        return def;
    }

    public static boolean enabled(Map<String, ?> props) {
        Object table = props.get(EnrichConfig.TABLE);
        return table != null && !table.toString().isBlank();
    }

    /** For {@code Connector.validate()}: the transform's cross-key checks and the keys required once enrichment is on. */
    public static void problems(Map<String, String> props, Map<String, ConfigValue> values) {
        if (!enabled(props)) {
            return;
        }
        ConfigValue name = values.get(ReplicaConfig.NAME);
        Object replica = props.get(ReplicaConfig.NAME);
        if (name != null && (replica == null || replica.toString().isBlank())) {
            name.addErrorMessage(ReplicaConfig.NAME + " is required when " + EnrichConfig.TABLE
                    + " is set: name the replica to read the dimension rows from");
        }
        EnrichConfig.validateDependents(values);
    }

    private static ConfigDef.Validator optional(ConfigDef.Validator inner) {
        if (inner == null) {
            return null;
        }
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value != null) {
                    inner.ensureValid(name, value);
                }
            }

            @Override
            public String toString() {
                return inner.toString();
            }
        };
    }
}
