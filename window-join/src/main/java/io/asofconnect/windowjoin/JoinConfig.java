package io.asofconnect.windowjoin;

import io.asofconnect.common.config.EnumOption;
import io.asofconnect.common.record.EventTimes;
import io.asofconnect.common.record.FieldPath;
import io.asofconnect.common.record.KeyExtractor;
import io.asofconnect.common.record.KeySource;
import io.asofconnect.common.record.TimeSource;
import io.asofconnect.windowjoin.state.Side;
import io.asofconnect.writer.InsertMode;
import io.asofconnect.writer.PrimaryKeyMode;
import io.asofconnect.writer.RowMappingRules;
import io.asofconnect.writer.WriterSettings;
import io.asofconnect.writer.config.IdentifierValidator;
import io.asofconnect.writer.config.WriterOptions;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.Width;
import org.apache.kafka.common.config.ConfigException;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The window join's options: the two inputs, how each side's key and event time are read, the window, the join type,
 * lateness and idleness, where state and results go; plus the writer's connection, batching and exactly-once options
 * under the sink's names.
 */
public final class JoinConfig extends AbstractConfig {
    public static final String CONNECTOR_NAME = "name";
    public static final String TOPICS = "topics";
    public static final String LEFT_TOPIC = "join.left.topic";
    public static final String RIGHT_TOPIC = "join.right.topic";
    public static final String WINDOW_BEFORE_MS = "join.window.before.ms";
    public static final String WINDOW_AFTER_MS = "join.window.after.ms";
    public static final String TYPE = "join.type";
    public static final String LATENESS_MS = "join.allowed.lateness.ms";
    public static final String IDLE_TIMEOUT_MS = "join.idle.timeout.ms";
    public static final String LATE_POLICY = "join.late.policy";
    public static final String STATE_PATH = "join.state.path";
    public static final String OUTPUT_TABLE = "join.output.table";
    public static final String HELD_TABLE = "join.held.table.name";
    public static final String LATE_TABLE = "join.late.table.name";
    public static final String ADMIN_PREFIX = "join.admin.";
    public static final String ADMIN_BOOTSTRAP = ADMIN_PREFIX + "bootstrap.servers";
    public static final String ERRORS_TOLERANCE = "errors.tolerance";
    public static final String DLQ_TOPIC = "errors.deadletterqueue.topic.name";

    private static final EnumOption<JoinType> TYPES = EnumOption.of(JoinType.class);
    private static final EnumOption<LatePolicy> POLICIES = EnumOption.of(LatePolicy.class);
    private static final EnumOption<KeySource> KEY_SOURCES = EnumOption.of(KeySource.class);
    private static final EnumOption<TimeSource> TIME_SOURCES = EnumOption.of(TimeSource.class);
    private static final String G_INPUTS = "Inputs";
    private static final String G_WINDOW = "Window and lateness";
    private static final String G_OUTPUT = "Output and state";

    /** The options of one side: {@code join.left.*} or {@code join.right.*}. */
    public static final class SideOptions {
        public final String keySource;
        public final String keyFields;
        public final String timeSource;
        public final String timeField;
        public final String timeHeader;
        public final String prefix;

        SideOptions(String side) {
            String p = "join." + side + ".";
            keySource = p + "key.source";
            keyFields = p + "key.fields";
            timeSource = p + "time.source";
            timeField = p + "time.field";
            timeHeader = p + "time.header";
            prefix = p + "prefix";
        }
    }

    public static final SideOptions LEFT = new SideOptions("left");
    public static final SideOptions RIGHT = new SideOptions("right");

    public static final ConfigDef CONFIG_DEF = define();

    private static ConfigDef define() {
        ConfigDef def = new ConfigDef();
        int i = 0;
        def.define(LEFT_TOPIC, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(), Importance.HIGH,
                "The left input topic (for example the search queries). " + TOPICS + " must list exactly this topic and "
                        + RIGHT_TOPIC + ". Both topics must have the same number of partitions and be keyed alike, so that"
                        + " records that join land in the same partition number of both.",
                G_INPUTS, ++i, Width.MEDIUM, "Left topic");
        def.define(RIGHT_TOPIC, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(), Importance.HIGH,
                "The right input topic (for example the clicks); see " + LEFT_TOPIC + ".",
                G_INPUTS, ++i, Width.MEDIUM, "Right topic");
        for (SideOptions s : List.of(LEFT, RIGHT)) {
            String side = s == LEFT ? "left" : "right";
            def.define(s.keySource, Type.STRING, KeySource.VALUE.name(), KEY_SOURCES, Importance.HIGH,
                    "Where the " + side + " join key is read: VALUE (the fields in " + s.keyFields + ") or KEY (the"
                            + " record key, or the fields in " + s.keyFields + " of a struct key). One of " + KEY_SOURCES + ".",
                    G_INPUTS, ++i, Width.SHORT, side + " key source");
            def.define(s.keyFields, Type.LIST, "", FieldPath.listValidator(), Importance.HIGH,
                    "Comma-separated dotted field paths forming the " + side + " join key, in order (a composite key such"
                            + " as session_id,url). Both sides need the same number of paths; their values are compared"
                            + " in canonical form, so an int 7 and a long 7 are equal. A record whose key field is missing or"
                            + " null matches nothing (it is written unmatched on an outer side).",
                    G_INPUTS, ++i, Width.LONG, side + " key fields");
            def.define(s.timeSource, Type.STRING, TimeSource.RECORD_TIMESTAMP.name(), TIME_SOURCES, Importance.HIGH,
                    "Where the " + side + " event time is read: RECORD_TIMESTAMP, FIELD (" + s.timeField + ") or HEADER ("
                            + s.timeHeader + "). Epoch millis, a digit string, an ISO-8601 instant or a Connect Timestamp.",
                    G_INPUTS, ++i, Width.SHORT, side + " time source");
            def.define(s.timeField, Type.STRING, null, FieldPath.validator(true), Importance.MEDIUM,
                    "The dotted path of the " + side + " event-time field, with " + s.timeSource + "=FIELD.",
                    G_INPUTS, ++i, Width.MEDIUM, side + " time field");
            def.define(s.timeHeader, Type.STRING, null, Importance.MEDIUM,
                    "The header holding the " + side + " event time, with " + s.timeSource + "=HEADER.",
                    G_INPUTS, ++i, Width.MEDIUM, side + " time header");
        }
        int w = 0;
        def.define(WINDOW_BEFORE_MS, Type.LONG, ConfigDef.NO_DEFAULT_VALUE, Importance.HIGH,
                "How long before a left record's event time a right record may be and still match, in ms: a pair matches"
                        + " when left.time - before <= right.time <= left.time + after (both ends inclusive, as Flink SQL's"
                        + " BETWEEN and Kafka Streams' JoinWindows). 0 for clicks that must follow their query.",
                G_WINDOW, ++w, Width.SHORT, "Window before");
        def.define(WINDOW_AFTER_MS, Type.LONG, ConfigDef.NO_DEFAULT_VALUE, Importance.HIGH,
                "How long after a left record's event time a right record may be and still match, in ms (see "
                        + WINDOW_BEFORE_MS + "). " + WINDOW_BEFORE_MS + " + " + WINDOW_AFTER_MS + " must be >= 0.",
                G_WINDOW, ++w, Width.SHORT, "Window after");
        def.define(TYPE, Type.STRING, JoinType.INNER.name(), TYPES, Importance.HIGH,
                "INNER writes matched pairs only; LEFT also writes each left record that matched nothing once its window has"
                        + " closed (right columns NULL); RIGHT the same for right records; FULL both. Every row says which in"
                        + " __match (MATCHED, LEFT_ONLY, RIGHT_ONLY).",
                G_WINDOW, ++w, Width.SHORT, "Join type");
        def.define(LATENESS_MS, Type.LONG, ConfigDef.NO_DEFAULT_VALUE, ConfigDef.Range.atLeast(0), Importance.HIGH,
                "How far behind the greatest event time seen on its partition a record may arrive and still join, in ms."
                        + " Each partition's watermark is that greatest time minus this; a record behind it is late"
                        + " (" + LATE_POLICY + "). Unmatched rows wait for the other side's watermark, so a larger value delays"
                        + " them by as much. Required: no default suits both needs (Kafka Streams made its grace mandatory too).",
                G_WINDOW, ++w, Width.SHORT, "Allowed lateness");
        def.define(IDLE_TIMEOUT_MS, Type.LONG, 30_000L, ConfigDef.Range.atLeast(100), Importance.MEDIUM,
                "After this many ms without a record, a partition is idle: its watermark follows the other partitions'"
                        + " event times (or, when all are idle, the wall clock from the last event time seen), so that the"
                        + " unmatched rows of the last records still come out when the input stops.",
                G_WINDOW, ++w, Width.SHORT, "Idle timeout");
        def.define(LATE_POLICY, Type.STRING, LatePolicy.FAIL.name(), POLICIES, Importance.HIGH,
                "What happens to a late record: DROP (counted in join-late-records, logged, recorded in " + LATE_TABLE
                        + "), DLQ (the same, and sent to the dead letter queue: needs " + ERRORS_TOLERANCE + "=all and "
                        + DLQ_TOPIC + ") or FAIL (the task fails naming the record; nothing after it is written). Never silent.",
                G_WINDOW, ++w, Width.SHORT, "Late policy");
        int o = 0;
        def.define(OUTPUT_TABLE, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new IdentifierValidator(), Importance.HIGH,
                "The table in table.schema the join writes its rows to, keyed (__partition, __left_offset, __right_offset)."
                        + " With schema.evolution=BASIC it is created from the first rows and gains columns as fields appear.",
                G_OUTPUT, ++o, Width.MEDIUM, "Output table");
        def.define(LEFT.prefix, Type.STRING, "left_", Importance.LOW,
                "Prefix of the left value fields' column names in the output table.", G_OUTPUT, ++o, Width.SHORT, "Left prefix");
        def.define(RIGHT.prefix, Type.STRING, "right_", Importance.LOW,
                "Prefix of the right value fields' column names in the output table.", G_OUTPUT, ++o, Width.SHORT, "Right prefix");
        def.define(STATE_PATH, Type.STRING, "", Importance.MEDIUM,
                "A local directory for each task's window state (a MapDB file, deleted when the task stops and rebuilt from"
                        + " the input topics after a restart); empty means asof-connect-window-join under the worker's"
                        + " java.io.tmpdir. It holds every record whose window is open: plan for (events/s) x (window +"
                        + " lateness) x (record size).",
                G_OUTPUT, ++o, Width.LONG, "State directory");
        def.define(HELD_TABLE, Type.STRING, "asof_connect_join_held", new IdentifierValidator(), Importance.LOW,
                "The table in table.schema holding, per connector and input partition, the lowest offset still held in a"
                        + " window and the watermark, written with the rows. Created if absent; grant SELECT, INSERT, UPDATE.",
                G_OUTPUT, ++o, Width.MEDIUM, "Held offsets table");
        def.define(LATE_TABLE, Type.STRING, "asof_connect_join_late", new IdentifierValidator(), Importance.LOW,
                "The table in table.schema recording late records (topic, partition, offset, event time, watermark) until"
                        + " they can no longer be replayed. Created if absent; grant SELECT, INSERT, DELETE.",
                G_OUTPUT, ++o, Width.MEDIUM, "Late records table");
        def.define(ADMIN_BOOTSTRAP, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(), Importance.HIGH,
                "The Kafka cluster of the inputs, for the check that they are co-partitioned (same partition count) at"
                        + " validation and start. Other " + ADMIN_PREFIX + "* options (security.protocol, sasl.*) go to the same"
                        + " admin client.",
                G_OUTPUT, ++o, Width.LONG, "Admin bootstrap servers");
        WriterOptions.addConnection(def, "SELECT, INSERT, UPDATE on " + OUTPUT_TABLE + ", " + HELD_TABLE + " and " + LATE_TABLE
                + " (DELETE too on the last)");
        WriterOptions.addSchemaEvolution(def, G_OUTPUT, ++o);
        WriterOptions.addBatching(def, G_OUTPUT, ++o);
        WriterOptions.addExactlyOnce(def);
        return def;
    }

    private final String connectorName;
    private final WriterOptions writer;

    public JoinConfig(Map<String, String> props) {
        super(CONFIG_DEF, props, false);
        String name = props.get(CONNECTOR_NAME);
        if (name == null || name.isBlank()) {
            throw new ConfigException(CONNECTOR_NAME, name, "the connector name is required; it keys the join's rows in the offsets table");
        }
        connectorName = name;
        writer = WriterOptions.from(this, name);
        Map<String, String> problems = problems(props);
        if (!problems.isEmpty()) {
            Map.Entry<String, String> first = problems.entrySet().iterator().next();
            throw new ConfigException(first.getKey() + ": " + first.getValue());
        }
    }

    /** The problems that involve more than one key, by the key to report them on; shared with {@code validate}. */
    Map<String, String> problems(Map<String, String> props) {
        Map<String, String> p = new LinkedHashMap<>();
        String left = getString(LEFT_TOPIC);
        String right = getString(RIGHT_TOPIC);
        if (left.equals(right)) {
            p.put(RIGHT_TOPIC, "the right topic must differ from the left topic " + left);
        }
        List<String> topics = props.get(TOPICS) == null ? List.of()
                : List.of(props.get(TOPICS).split(",")).stream().map(String::trim).filter(t -> !t.isEmpty()).toList();
        if (!(topics.size() == 2 && topics.contains(left) && topics.contains(right))) {
            p.put(TOPICS, "must list exactly the two inputs: set " + TOPICS + "=" + left + "," + right + " (found " + topics
                    + "; topics.regex is not supported)");
        }
        if (keyFields(Side.LEFT).size() != keyFields(Side.RIGHT).size()) {
            p.put(RIGHT.keyFields, "both sides need the same number of key fields: " + LEFT.keyFields + "=" + keyFields(Side.LEFT)
                    + " but " + RIGHT.keyFields + "=" + keyFields(Side.RIGHT));
        }
        for (SideOptions s : List.of(LEFT, RIGHT)) {
            if (KEY_SOURCES.parse(s.keySource, getString(s.keySource)) == KeySource.VALUE && getList(s.keyFields).isEmpty()) {
                p.put(s.keyFields, "list the value fields forming the join key, or set " + s.keySource + "=KEY");
            }
            TimeSource t = TIME_SOURCES.parse(s.timeSource, getString(s.timeSource));
            if (t == TimeSource.FIELD && getString(s.timeField) == null) {
                p.put(s.timeField, "set the event-time field's path, since " + s.timeSource + "=FIELD");
            }
            if (t == TimeSource.HEADER && (getString(s.timeHeader) == null || getString(s.timeHeader).isBlank())) {
                p.put(s.timeHeader, "set the event-time header's name, since " + s.timeSource + "=HEADER");
            }
        }
        if (getLong(WINDOW_BEFORE_MS) + getLong(WINDOW_AFTER_MS) < 0) {
            p.put(WINDOW_AFTER_MS, "the window is empty: " + WINDOW_BEFORE_MS + " + " + WINDOW_AFTER_MS + " must be >= 0");
        }
        if (latePolicy() == LatePolicy.DLQ) {
            String dlq = props.get(DLQ_TOPIC);
            if (dlq == null || dlq.isBlank() || !"all".equals(props.get(ERRORS_TOLERANCE))) {
                p.put(LATE_POLICY, "DLQ needs " + ERRORS_TOLERANCE + "=all and " + DLQ_TOPIC + " set; or choose DROP or FAIL");
            }
        }
        if (getString(LEFT.prefix).equals(getString(RIGHT.prefix))) {
            p.put(RIGHT.prefix, "both sides' columns would collide: give " + LEFT.prefix + " and " + RIGHT.prefix + " different values");
        }
        return p;
    }

    public String connectorName() { return connectorName; }
    public WriterOptions writer() { return writer; }
    public String topic(Side side) { return getString(side == Side.LEFT ? LEFT_TOPIC : RIGHT_TOPIC); }
    public JoinType type() { return TYPES.parse(TYPE, getString(TYPE)); }
    public LatePolicy latePolicy() { return POLICIES.parse(LATE_POLICY, getString(LATE_POLICY)); }
    public JoinWindow window() { return new JoinWindow(getLong(WINDOW_BEFORE_MS), getLong(WINDOW_AFTER_MS), getLong(LATENESS_MS)); }
    public long idleTimeoutMs() { return getLong(IDLE_TIMEOUT_MS); }
    public Path statePath() {
        String path = getString(STATE_PATH).trim();
        return path.isEmpty() ? Path.of(System.getProperty("java.io.tmpdir"), "asof-connect-window-join") : Path.of(path);
    }
    public String outputTable() { return getString(OUTPUT_TABLE); }
    public String heldTable() { return getString(HELD_TABLE); }
    public String lateTable() { return getString(LATE_TABLE); }
    public String prefix(Side side) { return getString(side == Side.LEFT ? LEFT.prefix : RIGHT.prefix); }

    private SideOptions options(Side side) {
        return side == Side.LEFT ? LEFT : RIGHT;
    }

    List<FieldPath> keyFields(Side side) {
        String key = options(side).keyFields;
        return getList(key).stream().map(String::trim).filter(t -> !t.isEmpty()).map(t -> FieldPath.parse(key, t)).toList();
    }

    /** Reads a side's join key as the enrichment reads its own: the same paths, the same canonical values. */
    public KeyExtractor keys(Side side) {
        SideOptions s = options(side);
        return new KeyExtractor(KEY_SOURCES.parse(s.keySource, getString(s.keySource)), keyFields(side), s.keySource, s.keyFields);
    }

    public EventTimes times(Side side) {
        SideOptions s = options(side);
        String field = getString(s.timeField);
        return new EventTimes(TIME_SOURCES.parse(s.timeSource, getString(s.timeSource)),
                field == null ? null : FieldPath.parse(s.timeField, field), getString(s.timeHeader),
                new EventTimes.Options(s.timeSource, s.timeField, s.timeHeader));
    }

    /** The writer's settings: rows INSERTed into the output table, keyed by their inputs' coordinates. */
    public WriterSettings writerSettings() {
        return writer.settings(new RowMappingRules(outputTable(), InsertMode.INSERT, PrimaryKeyMode.RECORD_VALUE, OutputRows.KEY, false));
    }

    /** The admin client's properties: every {@code join.admin.*} option without the prefix. */
    public Map<String, Object> adminProperties() {
        return originalsWithPrefix(ADMIN_PREFIX);
    }

    @Override
    public String toString() {
        return "JoinConfig{name=" + connectorName + ", left=" + topic(Side.LEFT) + ", right=" + topic(Side.RIGHT) + ", type=" + type()
                + ", window=" + window() + ", idle.timeout.ms=" + idleTimeoutMs() + ", late.policy=" + latePolicy()
                + ", output=" + outputTable() + ", state=" + statePath() + "}";
    }
}
