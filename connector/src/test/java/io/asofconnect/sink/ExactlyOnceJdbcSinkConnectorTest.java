package io.asofconnect.sink;

import io.asofconnect.enrich.EnrichConfig;
import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.sink.config.ExactlyOnceJdbcSinkConfig;
import io.asofconnect.writer.InsertMode;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What REST config/validate answers, and the config class's parsing; no database needed. */
class ExactlyOnceJdbcSinkConnectorTest {
    private final ExactlyOnceJdbcSinkConnector connector = new ExactlyOnceJdbcSinkConnector();

    static Map<String, String> valid() {
        Map<String, String> p = new HashMap<>();
        p.put("name", "sink");
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_URL, "jdbc:postgresql://db:5432/app?sslmode=verify-full");
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_USER, "writer");
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_PASSWORD, "s3cret-value");
        return p;
    }

    private Map<String, List<String>> errors(Map<String, String> props) {
        Map<String, List<String>> out = new HashMap<>();
        for (ConfigValue v : connector.validate(props).configValues()) {
            if (!v.errorMessages().isEmpty()) {
                out.put(v.name(), v.errorMessages());
            }
        }
        return out;
    }

    @Test
    void aValidConfigHasNoErrors() {
        assertThat(errors(valid())).isEmpty();
        assertThat(new ExactlyOnceJdbcSinkConfig(valid()).insertMode()).isEqualTo(InsertMode.INSERT);
    }

    @ParameterizedTest
    @ValueSource(strings = {"socketFactory", "socketFactoryArg", "sslfactory", "SSLFactory", "sslhostnameverifier", "sslpasswordcallback",
            "authenticationPluginClassName", "loggerFile", "loggerLevel", "socket%46actory"})
    void urlsWithClassLoadingOrFileWritingPropertiesAreRejected(String property) {
        Map<String, String> p = valid();
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_URL, "jdbc:postgresql://db/app?ssl=true&" + property + "=evil.Clazz-marker");
        List<String> e = errors(p).get(ExactlyOnceJdbcSinkConfig.CONNECTION_URL);
        assertThat(e).singleElement().asString().contains("loads classes or writes files").doesNotContain("evil.Clazz-marker");
        assertThatThrownBy(() -> new ExactlyOnceJdbcSinkConfig(p)).isInstanceOf(ConfigException.class);
    }

    @Test
    void aPasswordInTheUrlIsRejectedWithoutEchoingIt() {
        Map<String, String> p = valid();
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_URL, "jdbc:postgresql://db/app?password=hunter2-marker");
        assertThat(errors(p).get(ExactlyOnceJdbcSinkConfig.CONNECTION_URL)).singleElement().asString()
                .contains(ExactlyOnceJdbcSinkConfig.CONNECTION_PASSWORD).doesNotContain("hunter2-marker");
    }

    @Test
    void onlyPostgresUrlsAreAccepted() {
        Map<String, String> p = valid();
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_URL, "jdbc:mysql://db/app");
        assertThat(errors(p).get(ExactlyOnceJdbcSinkConfig.CONNECTION_URL)).singleElement().asString().contains("jdbc:postgresql:");
        p.remove(ExactlyOnceJdbcSinkConfig.CONNECTION_URL);
        assertThat(errors(p)).containsKey(ExactlyOnceJdbcSinkConfig.CONNECTION_URL);
    }

    @Test
    void crossKeyMistakesAreReportedOnTheKeyToChange() {
        Map<String, String> p = valid();
        p.put(ExactlyOnceJdbcSinkConfig.INSERT_MODE, "upsert");
        assertThat(errors(p).get(ExactlyOnceJdbcSinkConfig.INSERT_MODE)).singleElement().asString()
                .contains("UPSERT needs a primary key").contains(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE);

        p = valid();
        p.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE, "RECORD_VALUE");
        assertThat(errors(p).get(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS)).singleElement().asString().contains("RECORD_VALUE needs");

        p = valid();
        p.put(ExactlyOnceJdbcSinkConfig.DELETE_ENABLED, "true");
        p.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE, "KAFKA");
        assertThat(errors(p).get(ExactlyOnceJdbcSinkConfig.DELETE_ENABLED)).singleElement().asString().contains("RECORD_KEY");
        Map<String, String> bad = p;
        assertThatThrownBy(() -> new ExactlyOnceJdbcSinkConfig(bad)).isInstanceOf(ConfigException.class)
                .hasMessageContaining(ExactlyOnceJdbcSinkConfig.DELETE_ENABLED);
    }

    @Test
    void aChangelogNeedsRecordKeyAndUpsertAndTheMessageSaysSo() {
        Map<String, String> p = valid();
        p.put(ExactlyOnceJdbcSinkConfig.CHANGELOG_OP_FIELD, "__op");
        p.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE, "RECORD_KEY");
        p.put(ExactlyOnceJdbcSinkConfig.INSERT_MODE, "UPSERT");
        assertThat(errors(p)).isEmpty();
        assertThat(new ExactlyOnceJdbcSinkConfig(p).changelogOpField()).isEqualTo("__op");
        assertThat(new ExactlyOnceJdbcSinkConfig(valid()).changelogOpField()).as("empty by default: off").isNull();

        Map<String, String> insert = new HashMap<>(p);
        insert.put(ExactlyOnceJdbcSinkConfig.INSERT_MODE, "INSERT");
        assertThat(errors(insert).get(ExactlyOnceJdbcSinkConfig.CHANGELOG_OP_FIELD)).singleElement().asString()
                .contains("insert.mode=UPSERT").doesNotContain("primary.key.mode=");
        assertThatThrownBy(() -> new ExactlyOnceJdbcSinkConfig(insert)).isInstanceOf(ConfigException.class)
                .hasMessageContaining(ExactlyOnceJdbcSinkConfig.CHANGELOG_OP_FIELD).hasMessageContaining("insert.mode=UPSERT");

        Map<String, String> byValue = new HashMap<>(p);
        byValue.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE, "RECORD_VALUE");
        byValue.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS, "id");
        assertThat(errors(byValue).get(ExactlyOnceJdbcSinkConfig.CHANGELOG_OP_FIELD)).singleElement().asString()
                .contains("primary.key.mode=RECORD_KEY").doesNotContain("insert.mode=");

        Map<String, String> neither = valid();
        neither.put(ExactlyOnceJdbcSinkConfig.CHANGELOG_OP_FIELD, "__op");
        assertThat(errors(neither).get(ExactlyOnceJdbcSinkConfig.CHANGELOG_OP_FIELD)).singleElement().asString()
                .contains("primary.key.mode=RECORD_KEY").contains("insert.mode=UPSERT").contains("set both");

        Map<String, String> padded = new HashMap<>(p);
        padded.put(ExactlyOnceJdbcSinkConfig.CHANGELOG_OP_FIELD, " __op ");
        assertThat(new ExactlyOnceJdbcSinkConfig(padded).changelogOpField()).as("trimmed, as Connect trims every string")
                .isEqualTo("__op");
    }

    @Test
    void wrongValuesNameTheValidOnes() {
        Map<String, String> p = valid();
        p.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE, "record");
        p.put(ExactlyOnceJdbcSinkConfig.BATCH_SIZE, "0");
        p.put(ExactlyOnceJdbcSinkConfig.OFFSETS_TABLE_NAME, "x".repeat(64));
        Map<String, List<String>> e = errors(p);
        assertThat(e.get(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE)).singleElement().asString().contains("NONE, KAFKA, RECORD_KEY, RECORD_VALUE");
        assertThat(e).containsKey(ExactlyOnceJdbcSinkConfig.BATCH_SIZE);
        assertThat(e.get(ExactlyOnceJdbcSinkConfig.OFFSETS_TABLE_NAME)).singleElement().asString().contains("63 bytes");
    }

    @Test
    void aBlankUserAndBadPrimaryKeyFieldListsAreRejected() {
        Map<String, String> p = valid();
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_USER, "  ");
        assertThat(errors(p).get(ExactlyOnceJdbcSinkConfig.CONNECTION_USER)).singleElement().asString().contains("must not be blank");
        assertThatThrownBy(() -> new ExactlyOnceJdbcSinkConfig(p)).isInstanceOf(ConfigException.class)
                .hasMessageContaining(ExactlyOnceJdbcSinkConfig.CONNECTION_USER);
        p.remove(ExactlyOnceJdbcSinkConfig.CONNECTION_USER);
        assertThat(errors(p)).as("the user may be left out").isEmpty();

        Map<String, String> q = valid();
        q.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_MODE, "RECORD_VALUE");
        q.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS, "id, Id , id");
        assertThat(errors(q).get(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS)).singleElement().asString().contains("id is listed twice");
        q.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS, "a,,b");
        assertThat(errors(q).get(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS)).singleElement().asString().contains("entry 2 is empty");
        q.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS, "a," + "x".repeat(64));
        assertThat(errors(q).get(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS)).singleElement().asString().contains("entry 2 is 64 bytes");
        assertThatThrownBy(() -> new ExactlyOnceJdbcSinkConfig(q)).isInstanceOf(ConfigException.class)
                .hasMessageContaining(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS);
        q.put(ExactlyOnceJdbcSinkConfig.PRIMARY_KEY_FIELDS, "id, \"odd; name\"");
        assertThat(errors(q)).isEmpty();
        assertThat(new ExactlyOnceJdbcSinkConfig(q).primaryKeyFields()).containsExactly("id", "\"odd; name\"");
    }

    @Test
    void enrichmentKeysAreOptionalUntilEnrichTableIsSet() {
        assertThat(errors(valid())).doesNotContainKeys(EnrichConfig.TABLE, ReplicaConfig.NAME);
        assertThat(new ExactlyOnceJdbcSinkConfig(valid()).enrichmentEnabled()).isFalse();
        Map<String, String> p = valid();
        p.put(EnrichConfig.TABLE, "public.customers");
        Map<String, List<String>> e = errors(p);
        assertThat(e.get(ReplicaConfig.NAME)).singleElement().asString().contains("required when " + EnrichConfig.TABLE);
        assertThat(e.get(EnrichConfig.KEY_FIELDS)).singleElement().asString().contains("required");
        p.put(EnrichConfig.TABLE, "customers");
        assertThat(errors(p).get(EnrichConfig.TABLE)).singleElement().asString().contains("schema.table");
    }

    @Test
    void thePasswordIsHiddenEverywhereTheConfigIsShown() {
        Map<String, String> p = valid();
        ExactlyOnceJdbcSinkConfig c = new ExactlyOnceJdbcSinkConfig(p);
        assertThat(c.toString()).doesNotContain("s3cret-value");
        assertThat(c.connectionPassword().toString()).doesNotContain("s3cret-value");
        assertThat(ExactlyOnceJdbcSinkConfig.CONFIG_DEF.configKeys().get(ExactlyOnceJdbcSinkConfig.CONNECTION_PASSWORD).type)
                .isEqualTo(ConfigDef.Type.PASSWORD);
        for (ConfigValue v : connector.validate(p).configValues()) {
            if (v.name().equals(ExactlyOnceJdbcSinkConfig.CONNECTION_PASSWORD)) {
                assertThat(String.valueOf(v.value())).doesNotContain("s3cret-value");
            }
        }
    }

    @Test
    void everyKeyIsDocumentedWithImportance() {
        List<String> withoutValidator = new java.util.ArrayList<>();
        for (ConfigDef.ConfigKey k : ExactlyOnceJdbcSinkConfig.CONFIG_DEF.configKeys().values()) {
            assertThat(k.documentation).as(k.name).isNotBlank();
            assertThat(k.importance).as(k.name).isNotNull();
            if (k.type != ConfigDef.Type.BOOLEAN && k.type != ConfigDef.Type.PASSWORD) {
                if (k.validator == null) {
                    withoutValidator.add(k.name);
                } else {
                    assertThat(k.validator.toString()).as("what %s accepts", k.name).isNotBlank();
                }
            }
        }
        assertThat(withoutValidator).as("keys without a validator").isEmpty();
        assertThat(ExactlyOnceJdbcSinkConfig.CONFIG_DEF.names()).contains(EnrichConfig.TABLE, ReplicaConfig.NAME,
                ExactlyOnceJdbcSinkConfig.OFFSETS_TABLE_NAME, ExactlyOnceJdbcSinkConfig.BUFFER_MAX_RECORDS);
    }

    @Test
    void tasksGetTheConnectorsConfig() {
        connector.start(valid());
        assertThat(connector.taskConfigs(3)).hasSize(3).allSatisfy(c -> assertThat(c).isEqualTo(valid()));
        assertThat(connector.taskClass()).isEqualTo(ExactlyOnceJdbcSinkTask.class);
        connector.stop();
    }
}
