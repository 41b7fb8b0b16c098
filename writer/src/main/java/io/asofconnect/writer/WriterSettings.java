package io.asofconnect.writer;

import org.apache.kafka.common.config.types.Password;

/**
 * What the writer needs from its host's configuration, built by the host (the sink from its config). The option
 * names below are the ones the writer's error messages cite; a host defines its options under these names, so
 * that a message names the key the user has to change. {@link io.asofconnect.writer.config.WriterOptions} defines
 * the shared ones for every host.
 *
 * @param connectorName     keys the host's rows in the offsets table
 * @param connectionUrl     a {@code jdbc:postgresql:} URL, already validated by the host
 * @param connectionUser    null to leave the user to the URL or the driver's defaults
 * @param connectionPassword null when there is none; only for opening connections, never logged
 * @param tableSchema       the schema of the target tables and of the offsets table
 * @param offsetsTableName  the offsets table, in {@code tableSchema}
 * @param schemaEvolution   whether the writer may create tables and add columns
 * @param rows              how a record becomes a row
 */
public record WriterSettings(String connectorName, String connectionUrl, String connectionUser, Password connectionPassword,
                             String tableSchema, String offsetsTableName, SchemaEvolution schemaEvolution, RowMappingRules rows) {
    public static final String CONNECTION_URL = "connection.url";
    public static final String CONNECTION_USER = "connection.user";
    public static final String CONNECTION_PASSWORD = "connection.password";
    public static final String SCHEMA_EVOLUTION = "schema.evolution";
    public static final String MAX_RETRIES = "max.retries";
    public static final String TABLE_NAME_FORMAT = "table.name.format";
    public static final String PRIMARY_KEY_MODE = "primary.key.mode";
    public static final String PRIMARY_KEY_FIELDS = "primary.key.fields";
    public static final String CHANGELOG_OP_FIELD = "changelog.op.field";
    /** In {@link #TABLE_NAME_FORMAT}, replaced by the record's topic. */
    public static final String TOPIC_PLACEHOLDER = "${topic}";

    /** Never the URL (its query may carry secrets) or the password. */
    @Override
    public String toString() {
        return "WriterSettings{connector=" + connectorName + ", user=" + connectionUser + ", schema=" + tableSchema
                + ", offsetsTable=" + offsetsTableName + ", schemaEvolution=" + schemaEvolution + ", rows=" + rows + "}";
    }
}
