package io.asofconnect.writer.config;

import io.asofconnect.writer.InsertMode;
import io.asofconnect.writer.PrimaryKeyMode;
import io.asofconnect.writer.RowMappingRules;
import io.asofconnect.writer.SchemaEvolution;
import io.asofconnect.writer.WriterRetries;
import io.asofconnect.writer.WriterSettings;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WriterOptionsTest {
    /** A host that defines only the writer's options, the way the join does around its own. */
    private static ConfigDef def() {
        ConfigDef def = WriterOptions.addConnection(new ConfigDef());
        WriterOptions.addSchemaEvolution(def, "Output", 1);
        WriterOptions.addBatching(def, "Output", 2);
        return WriterOptions.addExactlyOnce(def);
    }

    private static Map<String, String> props() {
        Map<String, String> p = new HashMap<>();
        p.put(WriterOptions.CONNECTION_URL, " jdbc:postgresql://db/app?sslmode=verify-full ");
        p.put(WriterOptions.CONNECTION_USER, "writer");
        p.put(WriterOptions.CONNECTION_PASSWORD, "s3cret-value");
        return p;
    }

    @Test
    void theKeysAreDefinedInTheirGroupsAndOrder() {
        ConfigDef def = def();
        assertThat(List.copyOf(def.names())).containsExactlyInAnyOrder(WriterOptions.CONNECTION_URL, WriterOptions.CONNECTION_USER,
                WriterOptions.CONNECTION_PASSWORD, WriterOptions.TABLE_SCHEMA, WriterOptions.SCHEMA_EVOLUTION, WriterOptions.BATCH_SIZE,
                WriterOptions.BATCH_LINGER_MS, WriterOptions.OFFSETS_TABLE_NAME, WriterOptions.MAX_RETRIES, WriterOptions.RETRY_BACKOFF_MS);
        assertThat(def.configKeys().keySet()).containsExactly("connection.url", "connection.user", "connection.password", "table.schema",
                "schema.evolution", "batch.size", "batch.linger.ms", "offsets.table.name", "max.retries", "retry.backoff.ms");
        ConfigDef.ConfigKey lingers = def.configKeys().get(WriterOptions.BATCH_LINGER_MS);
        assertThat(lingers.group).isEqualTo("Output");
        assertThat(lingers.orderInGroup).isEqualTo(3);
        assertThat(def.configKeys().get(WriterOptions.RETRY_BACKOFF_MS).group).isEqualTo(WriterOptions.GROUP_EXACTLY_ONCE);
        assertThat(def.configKeys().get(WriterOptions.RETRY_BACKOFF_MS).orderInGroup).isEqualTo(3);
        assertThat(def.configKeys().get(WriterOptions.TABLE_SCHEMA).group).isEqualTo(WriterOptions.GROUP_CONNECTION);
        assertThat(def.configKeys().get(WriterOptions.CONNECTION_PASSWORD).type).isEqualTo(ConfigDef.Type.PASSWORD);
        assertThat(def.configKeys().get(WriterOptions.MAX_RETRIES).documentation)
                .contains(WriterRetries.OPEN_BUDGET_MS / 1000 + " s in all");
    }

    @Test
    void theUsersDocumentationTakesTheHostsWordsForTheTargetTables() {
        assertThat(def().configKeys().get(WriterOptions.CONNECTION_USER).documentation)
                .startsWith("The database user. It needs " + WriterOptions.TARGET_PRIVILEGES + " and on offsets.table.name, and CREATE on table.schema");
        ConfigDef own = WriterOptions.addConnection(new ConfigDef(), "SELECT, INSERT on the output table");
        assertThat(own.configKeys().get(WriterOptions.CONNECTION_USER).documentation)
                .startsWith("The database user. It needs SELECT, INSERT on the output table and on offsets.table.name");
    }

    @Test
    void theParsedViewHasTheDefaultsAndBuildsTheWritersSettings() {
        WriterOptions o = WriterOptions.from(new AbstractConfig(def(), props()), "join");
        assertThat(o.connectorName()).isEqualTo("join");
        assertThat(o.connectionUrl()).isEqualTo("jdbc:postgresql://db/app?sslmode=verify-full");
        assertThat(o.connectionUser()).isEqualTo("writer");
        assertThat(o.connectionPassword().value()).isEqualTo("s3cret-value");
        assertThat(o.tableSchema()).isEqualTo("public");
        assertThat(o.schemaEvolution()).isEqualTo(SchemaEvolution.NONE);
        assertThat(o.offsetsTableName()).isEqualTo(WriterOptions.DEFAULT_OFFSETS_TABLE).isEqualTo("asof_connect_offsets");
        assertThat(o.maxRetries()).isEqualTo(10);
        assertThat(o.retryBackoffMs()).isEqualTo(3000L);
        assertThat(o.batchSize()).isEqualTo(3000);
        assertThat(o.batchLingerMs()).isEqualTo(100L);
        assertThat(o.toString()).doesNotContain("s3cret-value").doesNotContain("sslmode");

        RowMappingRules rows = new RowMappingRules("out", InsertMode.INSERT, PrimaryKeyMode.RECORD_VALUE, List.of("k"), false);
        WriterSettings s = o.settings(rows);
        assertThat(s).isEqualTo(new WriterSettings("join", o.connectionUrl(), "writer", o.connectionPassword(), "public",
                "asof_connect_offsets", SchemaEvolution.NONE, rows));

        WriterRetries r = o.retries(org.slf4j.LoggerFactory.getLogger(WriterOptionsTest.class), "connector join task 0", e -> e);
        assertThat(r.maxRetries()).isEqualTo(10);
        assertThat(r.retryBackoffMs()).isEqualTo(3000L);
        assertThat(r.openBudgetMs()).isEqualTo(WriterRetries.OPEN_BUDGET_MS);
    }

    @Test
    void valuesAreParsedInAnyCaseAndChecked() {
        Map<String, String> p = props();
        p.put(WriterOptions.SCHEMA_EVOLUTION, " basic ");
        p.put(WriterOptions.TABLE_SCHEMA, "Sales");
        assertThat(WriterOptions.from(new AbstractConfig(def(), p), "j").schemaEvolution()).isEqualTo(SchemaEvolution.BASIC);

        Map<String, String> bad = props();
        bad.put(WriterOptions.SCHEMA_EVOLUTION, "full");
        assertThatThrownBy(() -> new AbstractConfig(def(), bad)).isInstanceOf(ConfigException.class).hasMessageContaining("NONE, BASIC");
        Map<String, String> blankUser = props();
        blankUser.put(WriterOptions.CONNECTION_USER, " ");
        assertThatThrownBy(() -> new AbstractConfig(def(), blankUser)).hasMessageContaining("must not be blank");
        Map<String, String> noUrl = props();
        noUrl.remove(WriterOptions.CONNECTION_URL);
        assertThatThrownBy(() -> new AbstractConfig(def(), noUrl)).hasMessageContaining(WriterOptions.CONNECTION_URL);
        assertThatThrownBy(() -> WriterOptions.from(new AbstractConfig(def(), props()), " ")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("connector name is required");
    }
}
