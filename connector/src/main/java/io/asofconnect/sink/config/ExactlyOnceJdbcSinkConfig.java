package io.asofconnect.sink.config;

import io.asofconnect.common.config.EnumOption;
import io.asofconnect.common.config.OptionalText;
import io.asofconnect.sink.enrichment.EnrichmentOptions;
import io.asofconnect.writer.ConnectionFactory;
import io.asofconnect.writer.InsertMode;
import io.asofconnect.writer.PrimaryKeyMode;
import io.asofconnect.writer.RowMappingRules;
import io.asofconnect.writer.SchemaEvolution;
import io.asofconnect.writer.WriterSettings;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;

import java.util.List;
import java.util.Map;

/**
 * The sink's options, parsed once into typed fields. Every key is defined in {@link #CONFIG_DEF} with its
 * validator, so REST {@code config/validate} reports a wrong value before the connector starts; the checks
 * that involve two keys are in {@link #crossKeyProblems}.
 */
public final class ExactlyOnceJdbcSinkConfig extends AbstractConfig {
    /** Connect's own key; it names the connector's rows in the offsets table. */
    public static final String CONNECTOR_NAME = "name";

    public static final String CONNECTION_URL = WriterSettings.CONNECTION_URL;
    public static final String CONNECTION_USER = "connection.user";
    public static final String CONNECTION_PASSWORD = "connection.password";
    public static final String INSERT_MODE = "insert.mode";
    public static final String TABLE_NAME_FORMAT = WriterSettings.TABLE_NAME_FORMAT;
    public static final String TABLE_SCHEMA = "table.schema";
    public static final String PRIMARY_KEY_MODE = WriterSettings.PRIMARY_KEY_MODE;
    public static final String PRIMARY_KEY_FIELDS = WriterSettings.PRIMARY_KEY_FIELDS;
    public static final String SCHEMA_EVOLUTION = "schema.evolution";
    public static final String DELETE_ENABLED = "delete.enabled";
    public static final String BATCH_SIZE = "batch.size";
    public static final String BATCH_LINGER_MS = "batch.linger.ms";
    public static final String BUFFER_MAX_RECORDS = "buffer.max.records";
    public static final String OFFSETS_TABLE_NAME = "offsets.table.name";
    public static final String MAX_RETRIES = "max.retries";
    public static final String RETRY_BACKOFF_MS = "retry.backoff.ms";

    public static final String TOPIC_PLACEHOLDER = WriterSettings.TOPIC_PLACEHOLDER;

    /**
     * The most the task's {@code open} spends taking partitions over, retries included. It runs in the consumer's rebalance
     * callback, so it must return well within {@code max.poll.interval.ms} (300 s by default), or the group drops
     * the task and the rebalance starts over. It must also outlast the server's ending of a frozen former owner's
     * transaction (idle_in_transaction_session_timeout), whose row lock on the offsets row a take-over waits for.
     */
    public static final long OPEN_BUDGET_MS = ConnectionFactory.IDLE_IN_TRANSACTION_TIMEOUT_MS + 60_000L;

    private static final EnumOption<InsertMode> INSERT_MODES = EnumOption.of(InsertMode.class);
    private static final EnumOption<PrimaryKeyMode> PK_MODES = EnumOption.of(PrimaryKeyMode.class);
    private static final EnumOption<SchemaEvolution> EVOLUTIONS = EnumOption.of(SchemaEvolution.class);

    private static final String G_CONNECTION = "Connection";
    private static final String G_WRITES = "Writes";
    private static final String G_EXACTLY_ONCE = "Exactly-once and retries";

    public static final ConfigDef CONFIG_DEF = EnrichmentOptions.addTo(define(new ConfigDef()));

    static ConfigDef define(ConfigDef def) {
        int c = 0;
        int w = 0;
        int e = 0;
        return def
                .define(CONNECTION_URL, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new JdbcUrlValidator(), Importance.HIGH,
                        "The target database, as jdbc:postgresql://host:port/database. Driver properties that load classes or"
                                + " write files (socketFactory, sslfactory, sslhostnameverifier, sslpasswordcallback,"
                                + " authenticationPluginClassName, xmlFactoryFactory, loggerFile, loggerLevel) and passwords are refused;"
                                + " use sslmode=verify-full in production (disable, allow and prefer log a warning).",
                        G_CONNECTION, ++c, ConfigDef.Width.LONG, "JDBC URL")
                .define(CONNECTION_USER, Type.STRING, null, OptionalText.nonBlank("a Postgres role name"), Importance.HIGH,
                        "The database user. It needs SELECT, INSERT, UPDATE (and DELETE with " + DELETE_ENABLED
                                + ") on the target tables and on " + OFFSETS_TABLE_NAME + ", and CREATE on " + TABLE_SCHEMA
                                + " if that table or " + SCHEMA_EVOLUTION + "=BASIC must create tables.",
                        G_CONNECTION, ++c, ConfigDef.Width.MEDIUM, "User")
                .define(CONNECTION_PASSWORD, Type.PASSWORD, null, Importance.HIGH,
                        "The database password. Prefer a config provider reference such as ${file:/path/secrets.properties:password};"
                                + " the value is never logged or shown.",
                        G_CONNECTION, ++c, ConfigDef.Width.MEDIUM, "Password")
                .define(TABLE_SCHEMA, Type.STRING, "public", new IdentifierValidator(), Importance.MEDIUM,
                        "The Postgres schema holding the target tables and the offsets table.",
                        G_CONNECTION, ++c, ConfigDef.Width.SHORT, "Schema")
                .define(INSERT_MODE, Type.STRING, InsertMode.INSERT.name(), INSERT_MODES, Importance.HIGH,
                        "How rows are written: INSERT (append; a duplicate key fails the record) or UPSERT (INSERT ... ON"
                                + " CONFLICT DO UPDATE on the primary key; needs " + PRIMARY_KEY_MODE + " other than NONE)."
                                + " One of " + INSERT_MODES + "; default INSERT.",
                        G_WRITES, ++w, ConfigDef.Width.SHORT, "Insert mode")
                .define(TABLE_NAME_FORMAT, Type.STRING, TOPIC_PLACEHOLDER, new ConfigDef.NonEmptyString(), Importance.MEDIUM,
                        "The target table name, where " + TOPIC_PLACEHOLDER + " is replaced by the record's topic. The"
                                + " result is one quoted identifier (dots are part of the name; use " + TABLE_SCHEMA
                                + " for the schema), at most 63 bytes.",
                        G_WRITES, ++w, ConfigDef.Width.MEDIUM, "Table name format")
                .define(PRIMARY_KEY_MODE, Type.STRING, PrimaryKeyMode.NONE.name(), PK_MODES, Importance.HIGH,
                        "Where the primary key comes from: NONE, KAFKA (columns __connect_topic, __connect_partition,"
                                + " __connect_offset), RECORD_KEY (the key's fields, or for a primitive key the one column named in "
                                + PRIMARY_KEY_FIELDS + ") or RECORD_VALUE (the value fields named in " + PRIMARY_KEY_FIELDS
                                + "). Default NONE.",
                        G_WRITES, ++w, ConfigDef.Width.SHORT, "Primary key mode")
                .define(PRIMARY_KEY_FIELDS, Type.LIST, "", new IdentifierListValidator(), Importance.MEDIUM,
                        "Comma-separated primary key columns: required with RECORD_VALUE; with RECORD_KEY a subset of the"
                                + " key's fields, or the column name of a primitive key (default __record_key). Ignored otherwise.",
                        G_WRITES, ++w, ConfigDef.Width.LONG, "Primary key fields")
                .define(SCHEMA_EVOLUTION, Type.STRING, SchemaEvolution.NONE.name(), EVOLUTIONS, Importance.MEDIUM,
                        "NONE: tables and columns must exist. BASIC: create a missing table from the record schema (with the"
                                + " primary key) and add missing columns as nullable. Default NONE.",
                        G_WRITES, ++w, ConfigDef.Width.SHORT, "Schema evolution")
                .define(DELETE_ENABLED, Type.BOOLEAN, false, Importance.MEDIUM,
                        "Whether a tombstone (null value) deletes the row with the record key. Needs " + PRIMARY_KEY_MODE
                                + "=RECORD_KEY; a tombstone without a key then names no row and is a bad record (errant record"
                                + " reporter, or the task fails). When false, every tombstone is skipped, with or without a key"
                                + " (its offset still advances).",
                        G_WRITES, ++w, ConfigDef.Width.SHORT, "Delete on tombstone")
                .define(BATCH_SIZE, Type.INT, 3000, ConfigDef.Range.between(1, 1_000_000), Importance.MEDIUM,
                        "Buffered records that trigger a flush (one transaction with their offsets). Larger batches write"
                                + " faster and hold more memory.",
                        G_WRITES, ++w, ConfigDef.Width.SHORT, "Batch size")
                .define(BATCH_LINGER_MS, Type.LONG, 100L, ConfigDef.Range.between(0, 3_600_000), Importance.MEDIUM,
                        "The longest time, in milliseconds, that a buffered record waits for its batch to reach " + BATCH_SIZE
                                + ": after it the buffer is written as it is. It bounds how long the records of a quiet topic,"
                                + " or the tail of a burst, stay unwritten; without it they would wait for the worker's next offset"
                                + " commit (offset.flush.interval.ms, 60 s by default). A busy topic fills its batches first. 0 writes"
                                + " what every put delivered, as the Debezium and Confluent JDBC sinks do, in smaller transactions.",
                        G_WRITES, ++w, ConfigDef.Width.SHORT, "Batch linger")
                .define(BUFFER_MAX_RECORDS, Type.INT, 10_000, ConfigDef.Range.between(1, 10_000_000), Importance.LOW,
                        "Records one partition may hold while they wait for enrichment (the replica's watermark); when"
                                + " reached the partition is paused until the oldest record can be enriched.",
                        G_WRITES, ++w, ConfigDef.Width.SHORT, "Hold buffer bound")
                .define(OFFSETS_TABLE_NAME, Type.STRING, "asof_connect_offsets", new IdentifierValidator(), Importance.MEDIUM,
                        "The table in " + TABLE_SCHEMA + " holding, per connector and partition, the next Kafka offset to write"
                                + " and the owning task's epoch (fencing). Written in the same transaction as the rows;"
                                + " created if absent. Never point two different sinks' data at different tables but the same"
                                + " connector name.",
                        G_EXACTLY_ONCE, ++e, ConfigDef.Width.MEDIUM, "Offsets table")
                .define(MAX_RETRIES, Type.INT, 10, ConfigDef.Range.atLeast(0), Importance.MEDIUM,
                        "How many times a write that failed for a transient reason (connection lost, database shutting down,"
                                + " serialization failure, deadlock, too many connections) is tried again before the task fails;"
                                + " a write that succeeds starts the count again. Each retry is Connect's redelivery of the batch, "
                                + RETRY_BACKOFF_MS + " after the failure, so a target that stays down fails the task after "
                                + MAX_RETRIES + " + 1 failed writes in a row, no sooner than " + MAX_RETRIES + " x " + RETRY_BACKOFF_MS
                                + " after the first; offset commits in between do not write and do not count. Records stay"
                                + " buffered and partitions paused while retrying. Taking partitions over after a rebalance runs inside the consumer's"
                                + " rebalance callback, so there retries also stop after " + OPEN_BUDGET_MS / 1000 + " s in all (well within the default"
                                + " max.poll.interval.ms of 300 s) and the task fails.",
                        G_EXACTLY_ONCE, ++e, ConfigDef.Width.SHORT, "Max retries")
                .define(RETRY_BACKOFF_MS, Type.LONG, 3000L, ConfigDef.Range.between(0L, 600_000L), Importance.LOW,
                        "Milliseconds to wait before retrying after a transient failure.",
                        G_EXACTLY_ONCE, ++e, ConfigDef.Width.SHORT, "Retry backoff");
    }

    private final String connectorName;
    private final String connectionUrl;
    private final String connectionUser;
    private final Password connectionPassword;
    private final InsertMode insertMode;
    private final String tableNameFormat;
    private final String tableSchema;
    private final PrimaryKeyMode primaryKeyMode;
    private final List<String> primaryKeyFields;
    private final SchemaEvolution schemaEvolution;
    private final boolean deleteEnabled;
    private final int batchSize;
    private final int bufferMaxRecords;
    private final long batchLingerMs;
    private final String offsetsTableName;
    private final int maxRetries;
    private final long retryBackoffMs;
    private final boolean enrichmentEnabled;

    public ExactlyOnceJdbcSinkConfig(Map<String, String> props) {
        this(CONFIG_DEF, props);
    }

    ExactlyOnceJdbcSinkConfig(ConfigDef def, Map<String, String> props) {
        super(def, props, false);
        String name = props.get(CONNECTOR_NAME);
        if (name == null || name.isBlank()) {
            throw new ConfigException(CONNECTOR_NAME, name, "the connector name is required; it keys this sink's rows in the offsets table");
        }
        connectorName = name;
        connectionUrl = getString(CONNECTION_URL).trim();
        connectionUser = getString(CONNECTION_USER);
        connectionPassword = getPassword(CONNECTION_PASSWORD);
        insertMode = INSERT_MODES.parse(INSERT_MODE, getString(INSERT_MODE));
        tableNameFormat = getString(TABLE_NAME_FORMAT);
        tableSchema = getString(TABLE_SCHEMA);
        primaryKeyMode = PK_MODES.parse(PRIMARY_KEY_MODE, getString(PRIMARY_KEY_MODE));
        primaryKeyFields = getList(PRIMARY_KEY_FIELDS).stream().map(String::trim).filter(s -> !s.isEmpty()).toList();
        schemaEvolution = EVOLUTIONS.parse(SCHEMA_EVOLUTION, getString(SCHEMA_EVOLUTION));
        deleteEnabled = getBoolean(DELETE_ENABLED);
        batchSize = getInt(BATCH_SIZE);
        bufferMaxRecords = getInt(BUFFER_MAX_RECORDS);
        batchLingerMs = getLong(BATCH_LINGER_MS);
        offsetsTableName = getString(OFFSETS_TABLE_NAME);
        maxRetries = getInt(MAX_RETRIES);
        retryBackoffMs = getLong(RETRY_BACKOFF_MS);
        enrichmentEnabled = EnrichmentOptions.enabled(props);
        Map<String, String> problems = crossKeyProblems(insertMode, primaryKeyMode, primaryKeyFields, deleteEnabled);
        if (!problems.isEmpty()) {
            Map.Entry<String, String> first = problems.entrySet().iterator().next();
            throw new ConfigException(first.getKey() + ": " + first.getValue());
        }
    }

    /**
     * The problems that involve more than one key, by the key to report them on. Shared by the task's
     * parsing and {@code Connector.validate()} so both say the same thing.
     */
    public static Map<String, String> crossKeyProblems(InsertMode insertMode, PrimaryKeyMode pkMode, List<String> pkFields, boolean deleteEnabled) {
        Map<String, String> problems = new java.util.LinkedHashMap<>();
        if (insertMode == InsertMode.UPSERT && pkMode == PrimaryKeyMode.NONE) {
            problems.put(INSERT_MODE, "UPSERT needs a primary key: set " + PRIMARY_KEY_MODE + " to KAFKA, RECORD_KEY or RECORD_VALUE");
        }
        if (pkMode == PrimaryKeyMode.RECORD_VALUE && pkFields.isEmpty()) {
            problems.put(PRIMARY_KEY_FIELDS, "RECORD_VALUE needs the primary key's value fields listed in " + PRIMARY_KEY_FIELDS);
        }
        if (deleteEnabled && pkMode != PrimaryKeyMode.RECORD_KEY) {
            problems.put(DELETE_ENABLED, "deleting on tombstones needs " + PRIMARY_KEY_MODE + "=RECORD_KEY (a tombstone carries only its key)");
        }
        return problems;
    }

    public String connectorName() { return connectorName; }
    public String connectionUrl() { return connectionUrl; }
    public String connectionUser() { return connectionUser; }
    /** Only for opening connections; never log it. */
    public Password connectionPassword() { return connectionPassword; }
    public InsertMode insertMode() { return insertMode; }
    public String tableNameFormat() { return tableNameFormat; }
    public String tableSchema() { return tableSchema; }
    public PrimaryKeyMode primaryKeyMode() { return primaryKeyMode; }
    public List<String> primaryKeyFields() { return primaryKeyFields; }
    public SchemaEvolution schemaEvolution() { return schemaEvolution; }
    public boolean deleteEnabled() { return deleteEnabled; }
    public int batchSize() { return batchSize; }
    public int bufferMaxRecords() { return bufferMaxRecords; }
    public long batchLingerMs() { return batchLingerMs; }
    public String offsetsTableName() { return offsetsTableName; }
    public int maxRetries() { return maxRetries; }
    public long retryBackoffMs() { return retryBackoffMs; }
    /** Whether {@code enrich.table} is set: records are then enriched in the task before they are buffered. */
    public boolean enrichmentEnabled() { return enrichmentEnabled; }

    /** What the writer needs of these options; {@code rows} tells it how a record becomes a row. */
    public WriterSettings writerSettings() {
        return new WriterSettings(connectorName, connectionUrl, connectionUser, connectionPassword, tableSchema, offsetsTableName,
                schemaEvolution, new RowMappingRules(tableNameFormat, insertMode, primaryKeyMode, primaryKeyFields, deleteEnabled));
    }

    /** Names the options that shape behaviour; never the URL's query (it may carry secrets) or the password. */
    @Override
    public String toString() {
        return "ExactlyOnceJdbcSinkConfig{name=" + connectorName + ", insert.mode=" + insertMode + ", primary.key.mode="
                + primaryKeyMode + ", schema.evolution=" + schemaEvolution + ", table.schema=" + tableSchema
                + ", offsets.table.name=" + offsetsTableName + ", batch.size=" + batchSize + ", batch.linger.ms=" + batchLingerMs + ", enrichment=" + enrichmentEnabled + "}";
    }
}
