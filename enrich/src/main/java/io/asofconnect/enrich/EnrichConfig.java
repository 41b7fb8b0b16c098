package io.asofconnect.enrich;

import io.asofconnect.common.record.FieldPath;
import io.asofconnect.common.record.KeySource;
import io.asofconnect.common.record.TimeSource;

import io.asofconnect.common.config.EnumOption;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code enrich.*} options, shared by the {@code AsOfEnrich} transform and the sink that hosts the
 * same enrichment. {@link #addTo(ConfigDef)} defines them; the constructor parses them once into typed
 * fields and checks the options that depend on each other (which a per-key validator cannot see).
 */
public final class EnrichConfig {
    public static final String TABLE = "enrich.table";
    public static final String KEY_SOURCE = "enrich.key.source";
    public static final String KEY_FIELDS = "enrich.key.fields";
    public static final String TIME_SOURCE = "enrich.time.source";
    public static final String TIME_FIELD = "enrich.time.field";
    public static final String TIME_HEADER = "enrich.time.header";
    public static final String MODE = "enrich.mode";
    public static final String VERSION_FIELD = "enrich.version.field";
    public static final String OUTPUT_MODE = "enrich.output.mode";
    public static final String OUTPUT_FIELD = "enrich.output.field";
    public static final String OUTPUT_PREFIX = "enrich.output.prefix";
    public static final String COLUMNS = "enrich.columns";
    public static final String VERSION_METADATA = "enrich.version.metadata";
    public static final String ON_MISS = "enrich.on.miss";
    public static final String ON_MISSING_KEY = "enrich.on.missing.key";
    public static final String LATENESS_WAIT_MS = "enrich.lateness.wait.ms";
    public static final String STARTUP_WAIT_MS = "enrich.startup.wait.ms";
    public static final String ON_LATE = "enrich.on.late";
    public static final String READ_YOUR_WRITES = "enrich.read.your.writes";

    public static final long LATENESS_WAIT_MS_DEFAULT = 5_000L;
    /**
     * A fifth of the consumer's default {@code max.poll.interval.ms} (300 s). The transform waits at most one
     * bound per stall of the replica, not per record (see {@link EnrichmentEngine#enrichBlocking}), so a
     * poll behind a stalled replica does not add up waits until the task is evicted.
     */
    public static final long LATENESS_WAIT_MS_MAX = 60_000L;
    /**
     * Two fifths of the consumer's default {@code max.poll.interval.ms}: a replica's first catch-up (an initial
     * snapshot) takes far longer than the stall {@link #LATENESS_WAIT_MS} is sized for, and failing the first
     * records of every fresh start would fail the task before the replica could ever finish.
     */
    public static final long STARTUP_WAIT_MS_DEFAULT = 120_000L;
    public static final long STARTUP_WAIT_MS_MAX = 3_600_000L;

    /** Name of the version-metadata column holding the version's valid-from (epoch millis, INT64). */
    public static final String VALID_FROM_COLUMN = "__valid_from";
    /** Name of the version-metadata column holding the {@code VersionId} text ({@code <validFromMillis>@<lsn>}). */
    public static final String VERSION_COLUMN = "__version";
    /** Header added under {@link OnLate#CURRENT_WITH_HEADER}: {@code "true"}. */
    public static final String LATE_HEADER = "asof.late";
    /** Header added under {@link OnLate#CURRENT_WITH_HEADER}: the replica's watermark then, epoch millis. */
    public static final String LATE_WATERMARK_HEADER = "asof.watermark";

    private static final String GROUP = "Enrichment";


    /** Which version of the row is joined. */
    public enum Mode { AS_OF, CURRENT, VERSION }

    /** How the row is written into the value. */
    public enum OutputMode { NESTED, FLATTEN }

    /** What happens when no row was valid at the event time. */
    public enum OnMiss { NULL, DROP, FAIL }

    /** What happens when the record lacks a key field, or it is null. */
    public enum OnMissingKey { FAIL, PASS_THROUGH }

    /** What happens when the replica's watermark did not pass the event time within the wait. */
    public enum OnLate { FAIL, CURRENT_WITH_HEADER }

    private static final EnumOption<KeySource> KEY_SOURCES = EnumOption.of(KeySource.class);
    private static final EnumOption<TimeSource> TIME_SOURCES = EnumOption.of(TimeSource.class);
    private static final EnumOption<Mode> MODES = EnumOption.of(Mode.class);
    private static final EnumOption<OutputMode> OUTPUT_MODES = EnumOption.of(OutputMode.class);
    private static final EnumOption<OnMiss> ON_MISSES = EnumOption.of(OnMiss.class);
    private static final EnumOption<OnMissingKey> ON_MISSING_KEYS = EnumOption.of(OnMissingKey.class);
    private static final EnumOption<OnLate> ON_LATES = EnumOption.of(OnLate.class);

    private final String table;
    private final KeySource keySource;
    private final List<FieldPath> keyFields;
    private final TimeSource timeSource;
    private final FieldPath timeField;
    private final String timeHeader;
    private final Mode mode;
    private final FieldPath versionField;
    private final OutputMode outputMode;
    private final String outputField;
    private final String outputPrefix;
    private final List<String> columns;
    private final boolean versionMetadata;
    private final OnMiss onMiss;
    private final OnMissingKey onMissingKey;
    private final long latenessWaitMs;
    private final long startupWaitMs;
    private final OnLate onLate;
    private final boolean readYourWrites;

    /**
     * Parses and checks {@code props} against the {@code enrich.*} definitions; other keys are ignored.
     *
     * @throws ConfigException naming the offending key
     */
    public EnrichConfig(Map<?, ?> props) {
        AbstractConfig c = new AbstractConfig(addTo(new ConfigDef()), props, false);
        this.table = c.getString(TABLE).trim();
        this.keySource = KEY_SOURCES.parse(KEY_SOURCE, c.getString(KEY_SOURCE));
        List<FieldPath> keys = new ArrayList<>();
        for (String k : c.getList(KEY_FIELDS)) {
            keys.add(FieldPath.parse(KEY_FIELDS, k));
        }
        this.keyFields = List.copyOf(keys);
        this.timeSource = TIME_SOURCES.parse(TIME_SOURCE, c.getString(TIME_SOURCE));
        this.timeField = optionalPath(TIME_FIELD, c.getString(TIME_FIELD));
        this.timeHeader = blankToNull(c.getString(TIME_HEADER));
        this.mode = MODES.parse(MODE, c.getString(MODE));
        this.versionField = optionalPath(VERSION_FIELD, c.getString(VERSION_FIELD));
        this.outputMode = OUTPUT_MODES.parse(OUTPUT_MODE, c.getString(OUTPUT_MODE));
        String simpleName = table.substring(table.lastIndexOf('.') + 1);
        this.outputField = Optional.ofNullable(blankToNull(c.getString(OUTPUT_FIELD))).orElse(simpleName);
        this.outputPrefix = Optional.ofNullable(c.getString(OUTPUT_PREFIX)).orElse(simpleName + "_");
        this.columns = List.copyOf(c.getList(COLUMNS));
        this.versionMetadata = c.getBoolean(VERSION_METADATA);
        this.onMiss = ON_MISSES.parse(ON_MISS, c.getString(ON_MISS));
        this.onMissingKey = ON_MISSING_KEYS.parse(ON_MISSING_KEY, c.getString(ON_MISSING_KEY));
        this.latenessWaitMs = c.getLong(LATENESS_WAIT_MS);
        this.startupWaitMs = c.getLong(STARTUP_WAIT_MS);
        this.onLate = ON_LATES.parse(ON_LATE, c.getString(ON_LATE));
        this.readYourWrites = c.getBoolean(READ_YOUR_WRITES);

        Map<String, String> problems = dependentProblems(keySource, keyFields.isEmpty(), timeSource, timeField != null,
                timeHeader != null, mode, versionField != null);
        if (!problems.isEmpty()) {
            Map.Entry<String, String> first = problems.entrySet().iterator().next();
            throw new ConfigException(first.getKey(), String.valueOf(props.get(first.getKey())), first.getValue());
        }
    }

    /** Adds every {@code enrich.*} option to {@code def} and returns it. */
    public static ConfigDef addTo(ConfigDef def) {
        int order = 0;
        return def
                .define(TABLE, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, tableValidator(), Importance.HIGH,
                        "The replicated table to join, as schema.table (e.g. public.customers). It must be one of the"
                                + " tables the replica captures; the transform fails to start otherwise.",
                        GROUP, ++order, ConfigDef.Width.MEDIUM, "Table")
                .define(KEY_SOURCE, Type.STRING, KeySource.VALUE.name(), KEY_SOURCES, Importance.HIGH,
                        "Where the join key is read from: VALUE (the record value) or KEY (the record key)."
                                + " Default: VALUE.",
                        GROUP, ++order, ConfigDef.Width.SHORT, "Key source")
                .define(KEY_FIELDS, Type.LIST, "", FieldPath.listValidator(), Importance.HIGH,
                        "Dotted paths of the fields holding the table's primary key, in the table's key-column order"
                                + " (several for a composite key), e.g. after.customer_id. Required when "
                                + KEY_SOURCE + "=VALUE; with KEY and no paths the whole record key is the key.",
                        GROUP, ++order, ConfigDef.Width.LONG, "Key fields")
                .define(TIME_SOURCE, Type.STRING, TimeSource.RECORD_TIMESTAMP.name(), TIME_SOURCES, Importance.HIGH,
                        "Where the event time for " + MODE + "=AS_OF is read from: RECORD_TIMESTAMP (the Kafka record"
                                + " timestamp), FIELD (" + TIME_FIELD + ") or HEADER (" + TIME_HEADER + ")."
                                + " Default: RECORD_TIMESTAMP.",
                        GROUP, ++order, ConfigDef.Width.SHORT, "Time source")
                .define(TIME_FIELD, Type.STRING, null, FieldPath.validator(true), Importance.MEDIUM,
                        "Dotted path of the event-time field when " + TIME_SOURCE + "=FIELD, e.g. source.ts_ms."
                                + " Its value may be epoch milliseconds (a number or a string of digits), an ISO-8601"
                                + " instant or offset date-time string, or a Connect Timestamp.",
                        GROUP, ++order, ConfigDef.Width.MEDIUM, "Time field")
                .define(TIME_HEADER, Type.STRING, null, NameValidators.optionalName("event-time"), Importance.MEDIUM,
                        "Name of the header holding the event time when " + TIME_SOURCE + "=HEADER; same value"
                                + " formats as " + TIME_FIELD + ". The last header of that name counts.",
                        GROUP, ++order, ConfigDef.Width.MEDIUM, "Time header")
                .define(MODE, Type.STRING, Mode.AS_OF.name(), MODES, Importance.HIGH,
                        "Which version is joined: AS_OF (the version valid at the event time; waits for the"
                                + " replica's watermark, deterministic on replay), CURRENT (the newest version, not"
                                + " deterministic on replay) or VERSION (the exact version named by "
                                + VERSION_FIELD + "). Default: AS_OF.",
                        GROUP, ++order, ConfigDef.Width.SHORT, "Mode")
                .define(VERSION_FIELD, Type.STRING, null, FieldPath.validator(true), Importance.MEDIUM,
                        "Dotted path of a field holding a version id (<validFromMillis>@<lsn>, as written by "
                                + VERSION_METADATA + ") when " + MODE + "=VERSION.",
                        GROUP, ++order, ConfigDef.Width.MEDIUM, "Version field")
                .define(OUTPUT_MODE, Type.STRING, OutputMode.NESTED.name(), OUTPUT_MODES, Importance.MEDIUM,
                        "How the row is written into the record value: NESTED (one optional struct/map field named by "
                                + OUTPUT_FIELD + ") or FLATTEN (one optional field per column, named "
                                + OUTPUT_PREFIX + " + column). Default: NESTED.",
                        GROUP, ++order, ConfigDef.Width.SHORT, "Output mode")
                .define(OUTPUT_FIELD, Type.STRING, null, NameValidators.optionalName("customer"), Importance.MEDIUM,
                        "Name of the field that receives the row in NESTED mode. Default: the table name without"
                                + " its schema (customers for public.customers).",
                        GROUP, ++order, ConfigDef.Width.MEDIUM, "Output field")
                .define(OUTPUT_PREFIX, Type.STRING, null, NameValidators.optionalPrefix("customer_"), Importance.MEDIUM,
                        "Prefix of the column fields in FLATTEN mode (may be empty). Default: the table name without"
                                + " its schema and an underscore (customers_).",
                        GROUP, ++order, ConfigDef.Width.MEDIUM, "Output prefix")
                .define(COLUMNS, Type.LIST, "", NameValidators.distinctNames("name,tier"), Importance.MEDIUM,
                        "The columns to copy, in output order, each named once. Empty (the default) copies every"
                                + " column of the version."
                                + " A listed column that an older version's shape lacks is left out of schema'd output"
                                + " and null in schemaless output.",
                        GROUP, ++order, ConfigDef.Width.LONG, "Columns")
                .define(VERSION_METADATA, Type.BOOLEAN, true, Importance.MEDIUM,
                        "Also write which version was joined, so a replay can be audited: the columns "
                                + VALID_FROM_COLUMN + " (valid-from, epoch millis) and " + VERSION_COLUMN
                                + " (the version id) inside the nested field, or prefixed like the columns in FLATTEN"
                                + " mode. Default: true.",
                        GROUP, ++order, ConfigDef.Width.SHORT, "Version metadata")
                .define(ON_MISS, Type.STRING, OnMiss.NULL.name(), ON_MISSES, Importance.MEDIUM,
                        "What to do when no row of the table was valid for the key then (never inserted, or deleted):"
                                + " NULL (enrich with nulls), DROP (drop the record) or FAIL (a data error, handled by"
                                + " errors.tolerance). With NULL, a schema'd miss has the columns of the last row"
                                + " schema seen for the table (all null), so hits and misses share one output schema;"
                                + " only before the first hit does it carry just the version-metadata columns."
                                + " Default: NULL.",
                        GROUP, ++order, ConfigDef.Width.SHORT, "On miss")
                .define(ON_MISSING_KEY, Type.STRING, OnMissingKey.FAIL.name(), ON_MISSING_KEYS, Importance.MEDIUM,
                        "What to do when the record lacks a key field or it is null (e.g. a Debezium delete, whose"
                                + " 'after' is null): FAIL (a data error) or PASS_THROUGH (leave the record unchanged)."
                                + " Default: FAIL.",
                        GROUP, ++order, ConfigDef.Width.SHORT, "On missing key")
                .define(LATENESS_WAIT_MS, Type.LONG, LATENESS_WAIT_MS_DEFAULT,
                        ConfigDef.Range.between(0L, LATENESS_WAIT_MS_MAX), Importance.MEDIUM,
                        "How long to wait, in milliseconds, for the replica's watermark to pass a record's event time"
                                + " before " + ON_LATE + " applies. Bounded well below the consumer's"
                                + " max.poll.interval.ms. The transform waits once per stall, not per record: after"
                                + " a wait times out, later records past the watermark get " + ON_LATE + " at once"
                                + " until the watermark passes the event time that timed out."
                                + " Default: " + LATENESS_WAIT_MS_DEFAULT + ".",
                        GROUP, ++order, ConfigDef.Width.SHORT, "Lateness wait (ms)")
                .define(STARTUP_WAIT_MS, Type.LONG, STARTUP_WAIT_MS_DEFAULT,
                        ConfigDef.Range.between(0L, STARTUP_WAIT_MS_MAX), Importance.MEDIUM,
                        "How long, in milliseconds, records may wait for a replica that has not yet caught up since"
                                + " the task started (its initial snapshot, or its catch-up after a restart: until its"
                                + " watermark first passes the time the task started). Until then it replaces "
                                + LATENESS_WAIT_MS + " (the larger of the two applies); after it, " + ON_LATE
                                + " applies. The stand-alone transform blocks its task while it waits, so keep this below"
                                + " the consumer's max.poll.interval.ms (300000 by default), or raise that with"
                                + " consumer.override.max.poll.interval.ms; the sink-hosted enrichment holds records"
                                + " without blocking. Size it to the replica's initial snapshot (the replica logs its"
                                + " progress and rate). Default: " + STARTUP_WAIT_MS_DEFAULT + ".",
                        GROUP, ++order, ConfigDef.Width.SHORT, "Startup wait (ms)")
                .define(ON_LATE, Type.STRING, OnLate.FAIL.name(), ON_LATES, Importance.MEDIUM,
                        "What to do when the watermark did not pass the event time within " + LATENESS_WAIT_MS + " (" + STARTUP_WAIT_MS + " while the replica has not caught up since the task started)"
                                + ": FAIL (a data error; the record is retried or sent to the DLQ per errors.*) or"
                                + " CURRENT_WITH_HEADER (enrich with the current row, not deterministic, and add the"
                                + " headers " + LATE_HEADER + "=true and " + LATE_WATERMARK_HEADER + "=<watermark>)."
                                + " Default: FAIL.",
                        GROUP, ++order, ConfigDef.Width.SHORT, "On late")
                .define(READ_YOUR_WRITES, Type.BOOLEAN, true, Importance.MEDIUM,
                        "Whether a record waits until the replica has applied every change committed before the record"
                                + " reached the connector (a probe sent through the slot after the task received the record,"
                                + " and after the broker's timestamp under LogAppendTime, has been applied), in every "
                                + MODE + ", in addition to the as-of condition. This is what"
                                + " makes a record produced after a change see that change under " + MODE + "=CURRENT and"
                                + " VERSION and under replica.valid.from=COLUMN, and after a restart or rebuild of the"
                                + " replica. A waiting record asks for that probe, so it costs about one probe's way through"
                                + " the source and the slot (tens of milliseconds) per record, and the sink holds, per"
                                + " partition, about that long's worth of records (size buffer.max.records to match). The stand-alone transform, which must answer each record"
                                + " before it gets the next, takes its bound replica.watermark.interval.ms plus the safety"
                                + " margin before the time it received the record; the sink takes the time itself."
                                + " Set false only to give up read-your-writes for that"
                                + " latency: records are then answered from whatever the replica has applied so far."
                                + " The wait counts against " + LATENESS_WAIT_MS + ", after which " + ON_LATE + " applies."
                                + " Default: true.",
                        GROUP, ++order, ConfigDef.Width.SHORT, "Read your writes");
    }

    /**
     * Adds the errors of options that depend on each other to {@code values} (as returned by
     * {@link ConfigDef#validateAll}), for a connector's {@code validate()}: a per-key validator cannot see them.
     */
    public static void validateDependents(Map<String, ConfigValue> values) {
        try {
            Map<String, String> problems = dependentProblems(
                    KEY_SOURCES.parse(KEY_SOURCE, str(values, KEY_SOURCE)), list(values, KEY_FIELDS).isEmpty(),
                    TIME_SOURCES.parse(TIME_SOURCE, str(values, TIME_SOURCE)), blankToNull(str(values, TIME_FIELD)) != null,
                    blankToNull(str(values, TIME_HEADER)) != null, MODES.parse(MODE, str(values, MODE)),
                    blankToNull(str(values, VERSION_FIELD)) != null);
            problems.forEach((key, message) -> {
                ConfigValue v = values.get(key);
                if (v != null) {
                    v.addErrorMessage(message);
                }
            });
        } catch (ConfigException e) {
            // An enum value is invalid: its own validator already reported it on that key.
        }
    }

    private static Map<String, String> dependentProblems(KeySource keySource, boolean noKeyFields, TimeSource timeSource,
                                                         boolean hasTimeField, boolean hasTimeHeader, Mode mode,
                                                         boolean hasVersionField) {
        Map<String, String> problems = new LinkedHashMap<>();
        if (keySource == KeySource.VALUE && noKeyFields) {
            problems.put(KEY_FIELDS, KEY_FIELDS + " is required when " + KEY_SOURCE + "=VALUE: list the dotted paths of"
                    + " the key fields, e.g. after.customer_id");
        }
        if (mode == Mode.AS_OF && timeSource == TimeSource.FIELD && !hasTimeField) {
            problems.put(TIME_FIELD, TIME_FIELD + " is required when " + TIME_SOURCE + "=FIELD: set the dotted path of"
                    + " the event-time field, e.g. source.ts_ms");
        }
        if (mode == Mode.AS_OF && timeSource == TimeSource.HEADER && !hasTimeHeader) {
            problems.put(TIME_HEADER, TIME_HEADER + " is required when " + TIME_SOURCE + "=HEADER: set the name of the"
                    + " header holding the event time");
        }
        if (mode == Mode.VERSION && !hasVersionField) {
            problems.put(VERSION_FIELD, VERSION_FIELD + " is required when " + MODE + "=VERSION: set the dotted path of"
                    + " the field holding the version id");
        }
        return problems;
    }

    private static ConfigDef.Validator tableValidator() {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                String s = value == null ? "" : value.toString().trim();
                int dot = s.indexOf('.');
                if (dot <= 0 || dot == s.length() - 1) {
                    throw new ConfigException(name, value, "must be schema.table, e.g. public.customers");
                }
            }

            @Override
            public String toString() {
                return "schema.table, e.g. public.customers";
            }
        };
    }

    private static FieldPath optionalPath(String key, String text) {
        return blankToNull(text) == null ? null : FieldPath.parse(key, text);
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.trim();
    }

    private static String str(Map<String, ConfigValue> values, String key) {
        ConfigValue v = values.get(key);
        return v == null || v.value() == null ? null : v.value().toString();
    }

    private static List<String> list(Map<String, ConfigValue> values, String key) {
        ConfigValue v = values.get(key);
        if (v == null || !(v.value() instanceof List<?> l)) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        l.forEach(o -> out.add(String.valueOf(o)));
        return out;
    }

    public String table() { return table; }
    public KeySource keySource() { return keySource; }
    public List<FieldPath> keyFields() { return keyFields; }
    public TimeSource timeSource() { return timeSource; }
    /** Null unless set. */
    public FieldPath timeField() { return timeField; }
    /** Null unless set. */
    public String timeHeader() { return timeHeader; }
    public Mode mode() { return mode; }
    /** Null unless set. */
    public FieldPath versionField() { return versionField; }
    public OutputMode outputMode() { return outputMode; }
    public String outputField() { return outputField; }
    public String outputPrefix() { return outputPrefix; }
    /** Empty means every column. */
    public List<String> columns() { return columns; }
    public boolean versionMetadata() { return versionMetadata; }
    public OnMiss onMiss() { return onMiss; }
    public OnMissingKey onMissingKey() { return onMissingKey; }
    public long latenessWaitMs() { return latenessWaitMs; }
    public long startupWaitMs() { return startupWaitMs; }
    public OnLate onLate() { return onLate; }
    public boolean readYourWrites() { return readYourWrites; }
}
