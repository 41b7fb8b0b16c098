package io.asofconnect.writer.config;

import io.asofconnect.common.config.EnumOption;
import io.asofconnect.common.config.OptionalText;
import io.asofconnect.writer.RowMappingRules;
import io.asofconnect.writer.SchemaEvolution;
import io.asofconnect.writer.WriterRetries;
import io.asofconnect.writer.WriterSettings;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.connect.errors.ConnectException;
import org.slf4j.Logger;

import java.util.function.UnaryOperator;

/**
 * The options of the exactly-once writer, shared by every connector that hosts one (the sink, the window join):
 * defined into the host's {@link ConfigDef} by the {@code add*} methods, under the same names, types, defaults and
 * validators in every host, and parsed by {@link #from} into this view. The host places them among its own
 * options: the {@code add*} methods that take a group and an order put the keys where the host wants them.
 */
public final class WriterOptions {
    public static final String CONNECTION_URL = WriterSettings.CONNECTION_URL;
    public static final String CONNECTION_USER = WriterSettings.CONNECTION_USER;
    public static final String CONNECTION_PASSWORD = WriterSettings.CONNECTION_PASSWORD;
    public static final String TABLE_SCHEMA = "table.schema";
    public static final String SCHEMA_EVOLUTION = WriterSettings.SCHEMA_EVOLUTION;
    public static final String OFFSETS_TABLE_NAME = "offsets.table.name";
    public static final String MAX_RETRIES = WriterSettings.MAX_RETRIES;
    public static final String RETRY_BACKOFF_MS = "retry.backoff.ms";
    public static final String BATCH_SIZE = "batch.size";
    public static final String BATCH_LINGER_MS = "batch.linger.ms";

    /** The default of {@link #OFFSETS_TABLE_NAME}. */
    public static final String DEFAULT_OFFSETS_TABLE = "asof_connect_offsets";

    /** The group of {@link #addConnection}. */
    public static final String GROUP_CONNECTION = "Connection";
    /** The group of {@link #addExactlyOnce}. */
    public static final String GROUP_EXACTLY_ONCE = "Exactly-once and retries";

    /** What {@link #addConnection(ConfigDef)} says the user needs on the tables the host writes. */
    public static final String TARGET_PRIVILEGES = "SELECT, INSERT, UPDATE on the target tables";

    private static final EnumOption<SchemaEvolution> EVOLUTIONS = EnumOption.of(SchemaEvolution.class);

    /**
     * Defines {@link #CONNECTION_URL}, {@link #CONNECTION_USER}, {@link #CONNECTION_PASSWORD} and {@link #TABLE_SCHEMA},
     * in that order, as the group {@value #GROUP_CONNECTION}; the user's documentation asks for
     * {@value #TARGET_PRIVILEGES}.
     */
    public static ConfigDef addConnection(ConfigDef def) {
        return addConnection(def, TARGET_PRIVILEGES);
    }

    /**
     * As {@link #addConnection(ConfigDef)}, with the host's own words for the privileges the user needs on the
     * tables it writes, e.g. "SELECT, INSERT, UPDATE (and DELETE with delete.enabled) on the target tables". The
     * documentation goes on "and on offsets.table.name, and CREATE on table.schema if ...".
     */
    public static ConfigDef addConnection(ConfigDef def, String targetPrivileges) {
        int c = 0;
        return def
                .define(CONNECTION_URL, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new JdbcUrlValidator(), Importance.HIGH,
                        "The target database, as jdbc:postgresql://host:port/database. Driver properties that load classes or"
                                + " write files (socketFactory, sslfactory, sslhostnameverifier, sslpasswordcallback,"
                                + " authenticationPluginClassName, xmlFactoryFactory, loggerFile, loggerLevel) and passwords are refused;"
                                + " use sslmode=verify-full in production (disable, allow and prefer log a warning).",
                        GROUP_CONNECTION, ++c, ConfigDef.Width.LONG, "JDBC URL")
                .define(CONNECTION_USER, Type.STRING, null, OptionalText.nonBlank("a Postgres role name"), Importance.HIGH,
                        "The database user. It needs " + targetPrivileges + " and on " + OFFSETS_TABLE_NAME + ", and CREATE on "
                                + TABLE_SCHEMA + " if that table or " + SCHEMA_EVOLUTION + "=BASIC must create tables.",
                        GROUP_CONNECTION, ++c, ConfigDef.Width.MEDIUM, "User")
                .define(CONNECTION_PASSWORD, Type.PASSWORD, null, Importance.HIGH,
                        "The database password. Prefer a config provider reference such as ${file:/path/secrets.properties:password};"
                                + " the value is never logged or shown.",
                        GROUP_CONNECTION, ++c, ConfigDef.Width.MEDIUM, "Password")
                .define(TABLE_SCHEMA, Type.STRING, "public", new IdentifierValidator(), Importance.MEDIUM,
                        "The Postgres schema holding the target tables and the offsets table.",
                        GROUP_CONNECTION, ++c, ConfigDef.Width.SHORT, "Schema");
    }

    /** Defines {@link #SCHEMA_EVOLUTION} (NONE or BASIC, default NONE) in {@code group} at {@code order}. */
    public static ConfigDef addSchemaEvolution(ConfigDef def, String group, int order) {
        return def.define(SCHEMA_EVOLUTION, Type.STRING, SchemaEvolution.NONE.name(), EVOLUTIONS, Importance.MEDIUM,
                "NONE: tables and columns must exist. BASIC: create a missing table from the record schema (with the"
                        + " primary key) and add missing columns as nullable. Default NONE.",
                group, order, ConfigDef.Width.SHORT, "Schema evolution");
    }

    /** Defines {@link #BATCH_SIZE} and {@link #BATCH_LINGER_MS} in {@code group}, at {@code firstOrder} and the next. */
    public static ConfigDef addBatching(ConfigDef def, String group, int firstOrder) {
        int o = firstOrder;
        return def
                .define(BATCH_SIZE, Type.INT, 3000, ConfigDef.Range.between(1, 1_000_000), Importance.MEDIUM,
                        "Buffered records that trigger a flush (one transaction with their offsets). Larger batches write"
                                + " faster and hold more memory.",
                        group, o++, ConfigDef.Width.SHORT, "Batch size")
                .define(BATCH_LINGER_MS, Type.LONG, 100L, ConfigDef.Range.between(0, 3_600_000), Importance.MEDIUM,
                        "The longest time, in milliseconds, that a buffered record waits for its batch to reach " + BATCH_SIZE
                                + ": after it the buffer is written as it is. It bounds how long the records of a quiet topic,"
                                + " or the tail of a burst, stay unwritten; without it they would wait for the worker's next offset"
                                + " commit (offset.flush.interval.ms, 60 s by default). A busy topic fills its batches first. 0 writes"
                                + " what every put delivered, as the Debezium and Confluent JDBC sinks do, in smaller transactions.",
                        group, o, ConfigDef.Width.SHORT, "Batch linger");
    }

    /**
     * Defines {@link #OFFSETS_TABLE_NAME}, {@link #MAX_RETRIES} and {@link #RETRY_BACKOFF_MS}, in that order, as the
     * group {@value #GROUP_EXACTLY_ONCE}.
     */
    public static ConfigDef addExactlyOnce(ConfigDef def) {
        int e = 0;
        return def
                .define(OFFSETS_TABLE_NAME, Type.STRING, DEFAULT_OFFSETS_TABLE, new IdentifierValidator(), Importance.MEDIUM,
                        "The table in " + TABLE_SCHEMA + " holding, per connector and partition, the next Kafka offset to write"
                                + " and the owning task's epoch (fencing). Written in the same transaction as the rows;"
                                + " created if absent. Never point two different sinks' data at different tables but the same"
                                + " connector name.",
                        GROUP_EXACTLY_ONCE, ++e, ConfigDef.Width.MEDIUM, "Offsets table")
                .define(MAX_RETRIES, Type.INT, 10, ConfigDef.Range.atLeast(0), Importance.MEDIUM,
                        "How many times a write that failed for a transient reason (connection lost, database shutting down,"
                                + " serialization failure, deadlock, too many connections) is tried again before the task fails;"
                                + " a write that succeeds starts the count again. Each retry is Connect's redelivery of the batch, "
                                + RETRY_BACKOFF_MS + " after the failure, so a target that stays down fails the task after "
                                + MAX_RETRIES + " + 1 failed writes in a row, no sooner than " + MAX_RETRIES + " x " + RETRY_BACKOFF_MS
                                + " after the first; offset commits in between do not write and do not count. Records stay"
                                + " buffered and partitions paused while retrying. Taking partitions over after a rebalance runs inside the consumer's"
                                + " rebalance callback, so there retries also stop after " + WriterRetries.OPEN_BUDGET_MS / 1000 + " s in all (well within the default"
                                + " max.poll.interval.ms of 300 s) and the task fails.",
                        GROUP_EXACTLY_ONCE, ++e, ConfigDef.Width.SHORT, "Max retries")
                .define(RETRY_BACKOFF_MS, Type.LONG, 3000L, ConfigDef.Range.between(0L, 600_000L), Importance.LOW,
                        "Milliseconds to wait before retrying after a transient failure.",
                        GROUP_EXACTLY_ONCE, ++e, ConfigDef.Width.SHORT, "Retry backoff");
    }

    /**
     * Reads the options from a config whose definition has every key above ({@link #addConnection},
     * {@link #addSchemaEvolution}, {@link #addBatching}, {@link #addExactlyOnce}).
     *
     * @param connectorName Connect's {@code name} of the connector; it keys the connector's rows in the offsets table
     * @throws ConfigException when the name is missing or blank
     */
    public static WriterOptions from(AbstractConfig config, String connectorName) {
        if (connectorName == null || connectorName.isBlank()) {
            throw new ConfigException("name", connectorName, "the connector name is required; it keys this connector's rows in the offsets table");
        }
        return new WriterOptions(connectorName,
                config.getString(CONNECTION_URL).trim(),
                config.getString(CONNECTION_USER),
                config.getPassword(CONNECTION_PASSWORD),
                config.getString(TABLE_SCHEMA),
                EVOLUTIONS.parse(SCHEMA_EVOLUTION, config.getString(SCHEMA_EVOLUTION)),
                config.getString(OFFSETS_TABLE_NAME),
                config.getInt(MAX_RETRIES),
                config.getLong(RETRY_BACKOFF_MS),
                config.getInt(BATCH_SIZE),
                config.getLong(BATCH_LINGER_MS));
    }

    private final String connectorName;
    private final String connectionUrl;
    private final String connectionUser;
    private final Password connectionPassword;
    private final String tableSchema;
    private final SchemaEvolution schemaEvolution;
    private final String offsetsTableName;
    private final int maxRetries;
    private final long retryBackoffMs;
    private final int batchSize;
    private final long batchLingerMs;

    private WriterOptions(String connectorName, String connectionUrl, String connectionUser, Password connectionPassword,
                          String tableSchema, SchemaEvolution schemaEvolution, String offsetsTableName, int maxRetries,
                          long retryBackoffMs, int batchSize, long batchLingerMs) {
        this.connectorName = connectorName;
        this.connectionUrl = connectionUrl;
        this.connectionUser = connectionUser;
        this.connectionPassword = connectionPassword;
        this.tableSchema = tableSchema;
        this.schemaEvolution = schemaEvolution;
        this.offsetsTableName = offsetsTableName;
        this.maxRetries = maxRetries;
        this.retryBackoffMs = retryBackoffMs;
        this.batchSize = batchSize;
        this.batchLingerMs = batchLingerMs;
    }

    public String connectorName() { return connectorName; }
    /** Trimmed; validated by {@link JdbcUrlValidator}. Its query may carry secrets: never log it. */
    public String connectionUrl() { return connectionUrl; }
    /** Null to leave the user to the URL or the driver's defaults. */
    public String connectionUser() { return connectionUser; }
    /** Null when there is none. Only for opening connections; never log it. */
    public Password connectionPassword() { return connectionPassword; }
    public String tableSchema() { return tableSchema; }
    public SchemaEvolution schemaEvolution() { return schemaEvolution; }
    public String offsetsTableName() { return offsetsTableName; }
    public int maxRetries() { return maxRetries; }
    public long retryBackoffMs() { return retryBackoffMs; }
    public int batchSize() { return batchSize; }
    public long batchLingerMs() { return batchLingerMs; }

    /** What the writer needs of these options; {@code rows} tells it how a record becomes a row. */
    public WriterSettings settings(RowMappingRules rows) {
        return new WriterSettings(connectorName, connectionUrl, connectionUser, connectionPassword, tableSchema, offsetsTableName,
                schemaEvolution, rows);
    }

    /**
     * The retries of a task with these options ({@code max.retries}, {@code retry.backoff.ms}, and the user,
     * schema and offsets table its advice names); see {@link WriterRetries#WriterRetries} for the arguments.
     */
    public WriterRetries retries(Logger log, String who, UnaryOperator<ConnectException> fail) {
        return new WriterRetries(connectionUser, tableSchema, offsetsTableName, maxRetries, retryBackoffMs, log, who, fail);
    }

    /** Never the URL (its query may carry secrets) or the password. */
    @Override
    public String toString() {
        return "WriterOptions{name=" + connectorName + ", schema.evolution=" + schemaEvolution + ", table.schema=" + tableSchema
                + ", offsets.table.name=" + offsetsTableName + ", batch.size=" + batchSize + ", batch.linger.ms=" + batchLingerMs
                + ", max.retries=" + maxRetries + ", retry.backoff.ms=" + retryBackoffMs + "}";
    }
}
