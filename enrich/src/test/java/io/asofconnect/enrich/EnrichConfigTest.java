package io.asofconnect.enrich;

import io.asofconnect.common.record.KeySource;
import io.asofconnect.common.record.TimeSource;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

import static io.asofconnect.enrich.Fixtures.props;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class EnrichConfigTest {

    @Test
    void defaultsAreParsedIntoTypedFields() {
        EnrichConfig c = new EnrichConfig(Map.of(EnrichConfig.TABLE, "public.customers", EnrichConfig.KEY_FIELDS, "after.customer_id"));
        assertThat(c.table()).isEqualTo("public.customers");
        assertThat(c.keySource()).isEqualTo(KeySource.VALUE);
        assertThat(c.keyFields()).extracting(Object::toString).containsExactly("after.customer_id");
        assertThat(c.timeSource()).isEqualTo(TimeSource.RECORD_TIMESTAMP);
        assertThat(c.mode()).isEqualTo(EnrichConfig.Mode.AS_OF);
        assertThat(c.outputMode()).isEqualTo(EnrichConfig.OutputMode.NESTED);
        assertThat(c.outputField()).isEqualTo("customers");
        assertThat(c.outputPrefix()).isEqualTo("customers_");
        assertThat(c.columns()).isEmpty();
        assertThat(c.versionMetadata()).isTrue();
        assertThat(c.onMiss()).isEqualTo(EnrichConfig.OnMiss.NULL);
        assertThat(c.onMissingKey()).isEqualTo(EnrichConfig.OnMissingKey.FAIL);
        assertThat(c.latenessWaitMs()).isEqualTo(EnrichConfig.LATENESS_WAIT_MS_DEFAULT);
        assertThat(c.onLate()).isEqualTo(EnrichConfig.OnLate.FAIL);
    }

    @Test
    void enumsAreCaseInsensitive() {
        assertThat(new EnrichConfig(props(EnrichConfig.OUTPUT_MODE, " flatten ")).outputMode()).isEqualTo(EnrichConfig.OutputMode.FLATTEN);
    }

    @Test
    void documentedDefaultsAreTheRealOnes() {
        ConfigDef def = EnrichConfig.addTo(new ConfigDef());
        Map<String, Object> defaults = def.defaultValues();
        for (ConfigDef.ConfigKey key : def.configKeys().values()) {
            if (key.hasDefault() && key.defaultValue != null && !key.defaultValue.toString().isEmpty()
                    && key.documentation.contains("Default:")) {
                assertThat(key.documentation).as(key.name).contains("Default: " + defaults.get(key.name));
            }
        }
    }

    @Test
    void theFieldTimeSourceNeedsTheTimeField() {
        Map<String, Object> p = props();
        p.remove(EnrichConfig.TIME_FIELD);
        assertThatThrownBy(() -> new EnrichConfig(p)).isInstanceOf(ConfigException.class)
                .hasMessageContaining(EnrichConfig.TIME_FIELD).hasMessageContaining(EnrichConfig.TIME_SOURCE + "=FIELD");
    }

    @Test
    void theHeaderTimeSourceNeedsTheHeaderName() {
        assertThatThrownBy(() -> new EnrichConfig(props(EnrichConfig.TIME_SOURCE, "HEADER")))
                .isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.TIME_HEADER);
    }

    @Test
    void versionModeNeedsTheVersionField() {
        assertThatThrownBy(() -> new EnrichConfig(props(EnrichConfig.MODE, "VERSION")))
                .isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.VERSION_FIELD);
    }

    @Test
    void theValueKeySourceNeedsKeyFields() {
        assertThatThrownBy(() -> new EnrichConfig(props(EnrichConfig.KEY_FIELDS, "")))
                .isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.KEY_FIELDS);
    }

    @Test
    void perKeyValidatorsNameTheirKey() {
        assertThatThrownBy(() -> new EnrichConfig(props(EnrichConfig.MODE, "SOMETIMES")))
                .isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.MODE).hasMessageContaining("AS_OF, CURRENT, VERSION");
        assertThatThrownBy(() -> new EnrichConfig(props(EnrichConfig.TABLE, "customers")))
                .isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.TABLE).hasMessageContaining("schema.table");
        assertThatThrownBy(() -> new EnrichConfig(props(EnrichConfig.KEY_FIELDS, "after..id")))
                .isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.KEY_FIELDS);
        assertThatThrownBy(() -> new EnrichConfig(props(EnrichConfig.LATENESS_WAIT_MS, Long.toString(EnrichConfig.LATENESS_WAIT_MS_MAX + 1))))
                .isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.LATENESS_WAIT_MS);
        assertThatThrownBy(() -> new EnrichConfig(props(EnrichConfig.COLUMNS, "a,a")))
                .isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.COLUMNS);
        Map<String, Object> noTable = props();
        noTable.remove(EnrichConfig.TABLE);
        assertThatThrownBy(() -> new EnrichConfig(noTable)).isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.TABLE);
    }

    @Test
    void validateDependentsReportsOnTheDependentKey() {
        Map<String, String> p = new HashMap<>();
        props(EnrichConfig.MODE, "VERSION").forEach((k, v) -> p.put(k, String.valueOf(v)));
        p.remove(EnrichConfig.TIME_FIELD);
        ConfigDef def = EnrichConfig.addTo(new ConfigDef());
        Map<String, ConfigValue> values = def.validate(p).stream().collect(Collectors.toMap(ConfigValue::name, Function.identity()));
        EnrichConfig.validateDependents(values);
        assertThat(values.get(EnrichConfig.VERSION_FIELD).errorMessages()).singleElement().asString().contains(EnrichConfig.MODE + "=VERSION");
        // Under VERSION the event time is not used, so a missing time field is no error.
        assertThat(values.get(EnrichConfig.TIME_FIELD).errorMessages()).isEmpty();
    }

    @Test
    void everyOptionHasTypeDefaultValidatorImportanceAndDoc() {
        ConfigDef def = EnrichConfig.addTo(new ConfigDef());
        assertThat(def.configKeys()).isNotEmpty();
        for (ConfigDef.ConfigKey key : def.configKeys().values()) {
            assertThat(key.name).startsWith("enrich.");
            assertThat(key.type).as(key.name).isNotNull();
            if (!key.hasDefault()) {
                assertThat(key.name).as("only the table is required").isEqualTo(EnrichConfig.TABLE);
            }
            if (key.type != ConfigDef.Type.BOOLEAN) {
                assertThat(key.validator).as(key.name + " validator").isNotNull();
                assertThat(key.validator.toString()).as(key.name + " validator text").isNotBlank();
                if (key.hasDefault()) {
                    // The default itself must pass the validator, or a connector with no value would not start.
                    key.validator.ensureValid(key.name, def.parse(Map.of(EnrichConfig.TABLE, "public.t")).get(key.name));
                }
            }
            assertThat(key.importance).as(key.name).isNotNull();
            assertThat(key.documentation).as(key.name + " doc").isNotBlank();
        }
    }

    @Test
    void nameOptionsAreValidatedOnTheirOwnKey() {
        ConfigDef def = EnrichConfig.addTo(new ConfigDef());
        Map<String, String> p = new HashMap<>();
        props().forEach((k, v) -> p.put(k, String.valueOf(v)));
        p.put(EnrichConfig.COLUMNS, "name,tier,name");
        p.put(EnrichConfig.TIME_HEADER, " ");
        p.put(EnrichConfig.OUTPUT_FIELD, "");
        p.put(EnrichConfig.OUTPUT_PREFIX, "c\u0000_".translateEscapes());
        Map<String, ConfigValue> values = def.validate(p).stream().collect(Collectors.toMap(ConfigValue::name, Function.identity()));
        assertThat(values.get(EnrichConfig.COLUMNS).errorMessages()).singleElement().asString().contains("distinct");
        assertThat(values.get(EnrichConfig.TIME_HEADER).errorMessages()).singleElement().asString().contains("empty");
        assertThat(values.get(EnrichConfig.OUTPUT_FIELD).errorMessages()).singleElement().asString().contains("empty");
        assertThat(values.get(EnrichConfig.OUTPUT_PREFIX).errorMessages()).singleElement().asString().contains("control");
        assertThat(values.get(EnrichConfig.TABLE).errorMessages()).isEmpty();

        assertThatThrownBy(() -> new EnrichConfig(props(EnrichConfig.COLUMNS, "name,,tier")))
                .isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.COLUMNS).hasMessageContaining("non-empty");
        // An empty prefix is a valid choice (columns keep their own names).
        assertThat(new EnrichConfig(props(EnrichConfig.OUTPUT_MODE, "FLATTEN", EnrichConfig.OUTPUT_PREFIX, "")).outputPrefix()).isEmpty();
        assertThat(new EnrichConfig(props(EnrichConfig.COLUMNS, "name, tier")).columns()).containsExactly("name", "tier");
    }
}
