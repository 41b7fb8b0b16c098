package io.asofconnect.sink.config;

import io.asofconnect.common.config.EnumOption;
import io.asofconnect.sink.enrichment.EnrichmentOptions;
import io.asofconnect.writer.InsertMode;
import io.asofconnect.writer.PrimaryKeyMode;
import io.asofconnect.writer.RowMappingRules;
import io.asofconnect.writer.SchemaEvolution;
import io.asofconnect.writer.WriterRetries;
import io.asofconnect.writer.WriterSettings;
import io.asofconnect.writer.config.IdentifierListValidator;
import io.asofconnect.writer.config.WriterOptions;
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

    public static final String CONNECTION_URL = WriterOptions.CONNECTION_URL;
    public static final String CONNECTION_USER = WriterOptions.CONNECTION_USER;
    public static final String CONNECTION_PASSWORD = WriterOptions.CONNECTION_PASSWORD;
    public static final String INSERT_MODE = "insert.mode";
    public static final String TABLE_NAME_FORMAT = WriterSettings.TABLE_NAME_FORMAT;
    public static final String TABLE_SCHEMA = WriterOptions.TABLE_SCHEMA;
    public static final String PRIMARY_KEY_MODE = WriterSettings.PRIMARY_KEY_MODE;
    public static final String PRIMARY_KEY_FIELDS = WriterSettings.PRIMARY_KEY_FIELDS;
    public static final String SCHEMA_EVOLUTION = WriterOptions.SCHEMA_EVOLUTION;
    public static final String DELETE_ENABLED = "delete.enabled";
    public static final String CHANGELOG_OP_FIELD = WriterSettings.CHANGELOG_OP_FIELD;
    public static final String BATCH_SIZE = WriterOptions.BATCH_SIZE;
    public static final String BATCH_LINGER_MS = WriterOptions.BATCH_LINGER_MS;
    public static final String BUFFER_MAX_RECORDS = "buffer.max.records";
    public static final String CHANGELOG_GROUP_HEADER = "changelog.group.header";
    /** The header the view source connector puts on the last record of each group (TableJoinSourceTask). */
    public static final String VIEW_GROUP_END_HEADER = "asof.view.group.end";
    public static final String OFFSETS_TABLE_NAME = WriterOptions.OFFSETS_TABLE_NAME;
    public static final String MAX_RETRIES = WriterOptions.MAX_RETRIES;
    public static final String RETRY_BACKOFF_MS = WriterOptions.RETRY_BACKOFF_MS;

    public static final String TOPIC_PLACEHOLDER = WriterSettings.TOPIC_PLACEHOLDER;

    /** The most the task's {@code open} spends taking partitions over, retries included: {@link WriterRetries#OPEN_BUDGET_MS}. */
    public static final long OPEN_BUDGET_MS = WriterRetries.OPEN_BUDGET_MS;

    /** The sink's words for what {@link #CONNECTION_USER} needs on the target tables. */
    static final String TARGET_PRIVILEGES = "SELECT, INSERT, UPDATE (and DELETE with " + DELETE_ENABLED + " or "
            + CHANGELOG_OP_FIELD + ") on the target tables";
    /** The sink's words for the target tables in the advice after a missing privilege ({@link WriterRetries#targetTables}). */
    public static final String TARGET_TABLES_ADVICE = "the target tables (DELETE too with " + DELETE_ENABLED + " or "
            + CHANGELOG_OP_FIELD + ")";

    private static final EnumOption<InsertMode> INSERT_MODES = EnumOption.of(InsertMode.class);
    private static final EnumOption<PrimaryKeyMode> PK_MODES = EnumOption.of(PrimaryKeyMode.class);

    private static final String G_WRITES = "Writes";

    public static final ConfigDef CONFIG_DEF = EnrichmentOptions.addTo(define(new ConfigDef()));

    /**
     * The writer's options ({@link WriterOptions}) and the sink's own, in the order of the option reference:
     * connection, then writes (the sink's mapping keys around schema evolution and batching), then exactly-once.
     */
    static ConfigDef define(ConfigDef def) {
        int w = 0;
        WriterOptions.addConnection(def, TARGET_PRIVILEGES);
        def
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
                        G_WRITES, ++w, ConfigDef.Width.LONG, "Primary key fields");
        WriterOptions.addSchemaEvolution(def, G_WRITES, ++w);
        def.define(DELETE_ENABLED, Type.BOOLEAN, false, Importance.MEDIUM,
                "Whether a tombstone (null value) deletes the row with the record key. Needs " + PRIMARY_KEY_MODE
                        + "=RECORD_KEY; a tombstone without a key then names no row and is a bad record (errant record"
                        + " reporter, or the task fails). When false, every tombstone is skipped, with or without a key"
                        + " (its offset still advances).",
                G_WRITES, ++w, ConfigDef.Width.SHORT, "Delete on tombstone");
        def.define(CHANGELOG_OP_FIELD, Type.STRING, "", new ChangelogOpFieldValidator(), Importance.MEDIUM,
                "Empty (default): every record value is a row. Otherwise the records are a retract changelog and this"
                        + " names the value field holding each one's operation, as Flink's RowKind prints it: +I and +U"
                        + " upsert the row the record key names, -U and -D delete it (whatever else the value holds); the"
                        + " field itself is not written. Records of one key are applied in their order, so a -U followed by"
                        + " its +U ends as the +U row. A value without the field, or with anything else in it, is a bad"
                        + " record (errant record reporter, or the task fails). Needs " + PRIMARY_KEY_MODE + "=RECORD_KEY and "
                        + INSERT_MODE + "=UPSERT; tombstones still follow " + DELETE_ENABLED + ".",
                G_WRITES, ++w, ConfigDef.Width.SHORT, "Changelog operation field");
        def.define(CHANGELOG_GROUP_HEADER, Type.STRING, "", new GroupHeaderValidator(), Importance.MEDIUM,
                "Empty (default): each flush commits every record read so far. Otherwise the name of a record header"
                        + " that marks the last record of a group to be applied in one target transaction: a partition is"
                        + " committed only up to its last record carrying this header with the value true; the records"
                        + " after it stay in memory, uncommitted, until their group's end arrives, and are then written in"
                        + " one flush. Set " + VIEW_GROUP_END_HEADER + " to apply the changelog of the view source connector"
                        + " (io.asofconnect.tablejoin.TableJoinSourceConnector) so that no reader of the target sees part of"
                        + " a source transaction. Needs topics of one partition (a group's keys would spread over several;"
                        + " the task fails on a partition other than 0) whose producer marks the end of every group: records"
                        + " after a partition's last mark wait until a mark follows, and a group is held whole in memory"
                        + " whatever " + WriterOptions.BATCH_SIZE + " says (watch sink-open-group-records). Cannot be combined"
                        + " with enrichment (enrich.table).",
                G_WRITES, ++w, ConfigDef.Width.MEDIUM, "Changelog group header");
        WriterOptions.addBatching(def, G_WRITES, w + 1);
        w += 2;
        def.define(BUFFER_MAX_RECORDS, Type.INT, 10_000, ConfigDef.Range.between(1, 10_000_000), Importance.LOW,
                "Records one partition may hold while they wait for enrichment (the replica's watermark); when"
                        + " reached the partition is paused until the oldest record can be enriched.",
                G_WRITES, ++w, ConfigDef.Width.SHORT, "Hold buffer bound");
        return WriterOptions.addExactlyOnce(def);
    }

    private final WriterOptions writerOptions;
    private final InsertMode insertMode;
    private final String tableNameFormat;
    private final PrimaryKeyMode primaryKeyMode;
    private final List<String> primaryKeyFields;
    private final boolean deleteEnabled;
    /** Null when off. */
    private final String changelogOpField;
    private final int bufferMaxRecords;
    private final boolean enrichmentEnabled;
    /** Null when off. */
    private final String groupHeader;

    public ExactlyOnceJdbcSinkConfig(Map<String, String> props) {
        this(CONFIG_DEF, props);
    }

    ExactlyOnceJdbcSinkConfig(ConfigDef def, Map<String, String> props) {
        super(def, props, false);
        String name = props.get(CONNECTOR_NAME);
        if (name == null || name.isBlank()) {
            throw new ConfigException(CONNECTOR_NAME, name, "the connector name is required; it keys this sink's rows in the offsets table");
        }
        writerOptions = WriterOptions.from(this, name);
        insertMode = INSERT_MODES.parse(INSERT_MODE, getString(INSERT_MODE));
        tableNameFormat = getString(TABLE_NAME_FORMAT);
        primaryKeyMode = PK_MODES.parse(PRIMARY_KEY_MODE, getString(PRIMARY_KEY_MODE));
        primaryKeyFields = getList(PRIMARY_KEY_FIELDS).stream().map(String::trim).filter(s -> !s.isEmpty()).toList();
        deleteEnabled = getBoolean(DELETE_ENABLED);
        String opField = getString(CHANGELOG_OP_FIELD);
        changelogOpField = opField.isEmpty() ? null : opField;
        bufferMaxRecords = getInt(BUFFER_MAX_RECORDS);
        enrichmentEnabled = EnrichmentOptions.enabled(props);
        String header = getString(CHANGELOG_GROUP_HEADER);
        groupHeader = header.isEmpty() ? null : header;
        Map<String, String> problems = crossKeyProblems(insertMode, primaryKeyMode, primaryKeyFields, deleteEnabled, changelogOpField);
        String grouping = groupingProblem(groupHeader, enrichmentEnabled);
        if (grouping != null) {
            problems.put(CHANGELOG_GROUP_HEADER, grouping);
        }
        if (!problems.isEmpty()) {
            Map.Entry<String, String> first = problems.entrySet().iterator().next();
            throw new ConfigException(first.getKey() + ": " + first.getValue());
        }
    }

    /**
     * The problems that involve more than one key, by the key to report them on. Shared by the task's
     * parsing and {@code Connector.validate()} so both say the same thing.
     */
    public static Map<String, String> crossKeyProblems(InsertMode insertMode, PrimaryKeyMode pkMode, List<String> pkFields, boolean deleteEnabled,
                                                       String changelogOpField) {
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
        if (changelogOpField != null && !changelogOpField.isEmpty()) {
            List<String> fixes = new java.util.ArrayList<>();
            if (pkMode != PrimaryKeyMode.RECORD_KEY) {
                fixes.add(PRIMARY_KEY_MODE + "=RECORD_KEY (the record key names the row each operation deletes or upserts)");
            }
            if (insertMode != InsertMode.UPSERT) {
                fixes.add(INSERT_MODE + "=UPSERT (a +U replaces the row of its key)");
            }
            if (!fixes.isEmpty()) {
                problems.put(CHANGELOG_OP_FIELD, "applying a changelog needs " + String.join(" and ", fixes) + ": set "
                        + (fixes.size() > 1 ? "both" : "it") + ", or leave " + CHANGELOG_OP_FIELD + " empty for records that are rows");
            }
        }
        return problems;
    }

    /** Why {@link #CHANGELOG_GROUP_HEADER} cannot be used with the other options, or null. */
    public static String groupingProblem(String groupHeader, boolean enrichmentEnabled) {
        if (groupHeader != null && !groupHeader.isEmpty() && enrichmentEnabled) {
            return "grouping records into one transaction cannot be combined with enrichment (enrich.table): the enrichment"
                    + " may hold part of a group back. Leave " + CHANGELOG_GROUP_HEADER + " empty, or enrich in another connector";
        }
        return null;
    }

    /** The writer's options, as every host of the writer reads them. */
    public WriterOptions writerOptions() { return writerOptions; }
    public String connectorName() { return writerOptions.connectorName(); }
    public String connectionUrl() { return writerOptions.connectionUrl(); }
    public String connectionUser() { return writerOptions.connectionUser(); }
    /** Only for opening connections; never log it. */
    public Password connectionPassword() { return writerOptions.connectionPassword(); }
    public InsertMode insertMode() { return insertMode; }
    public String tableNameFormat() { return tableNameFormat; }
    public String tableSchema() { return writerOptions.tableSchema(); }
    public PrimaryKeyMode primaryKeyMode() { return primaryKeyMode; }
    public List<String> primaryKeyFields() { return primaryKeyFields; }
    public SchemaEvolution schemaEvolution() { return writerOptions.schemaEvolution(); }
    public boolean deleteEnabled() { return deleteEnabled; }
    /** The value field holding a changelog record's operation; null when records are rows. */
    public String changelogOpField() { return changelogOpField; }
    public int batchSize() { return writerOptions.batchSize(); }
    public int bufferMaxRecords() { return bufferMaxRecords; }
    public long batchLingerMs() { return writerOptions.batchLingerMs(); }
    public String offsetsTableName() { return writerOptions.offsetsTableName(); }
    public int maxRetries() { return writerOptions.maxRetries(); }
    public long retryBackoffMs() { return writerOptions.retryBackoffMs(); }
    /** Whether {@code enrich.table} is set: records are then enriched in the task before they are buffered. */
    public boolean enrichmentEnabled() { return enrichmentEnabled; }
    /** The header marking the last record of a group to commit whole; null when every flush commits all it read. */
    public String groupHeader() { return groupHeader; }

    /** What the writer needs of these options; {@code rows} tells it how a record becomes a row. */
    public WriterSettings writerSettings() {
        return writerOptions.settings(new RowMappingRules(tableNameFormat, insertMode, primaryKeyMode, primaryKeyFields, deleteEnabled,
                changelogOpField));
    }

    /** Names the options that shape behaviour; never the URL's query (it may carry secrets) or the password. */
    @Override
    public String toString() {
        return "ExactlyOnceJdbcSinkConfig{name=" + connectorName() + ", insert.mode=" + insertMode + ", primary.key.mode="
                + primaryKeyMode + ", changelog.op.field=" + changelogOpField + ", schema.evolution=" + schemaEvolution() + ", table.schema=" + tableSchema()
                + ", offsets.table.name=" + offsetsTableName() + ", batch.size=" + batchSize() + ", batch.linger.ms=" + batchLingerMs()
                + ", changelog.group.header=" + groupHeader + ", enrichment=" + enrichmentEnabled + "}";
    }
}
