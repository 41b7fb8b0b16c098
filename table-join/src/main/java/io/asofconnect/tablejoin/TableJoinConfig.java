package io.asofconnect.tablejoin;

import io.asofconnect.common.config.EnumOption;
import io.asofconnect.common.config.OptionalText;
import io.asofconnect.common.config.QualifiedTables;
import io.asofconnect.replica.config.ReplicaConfig;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.Width;
import org.apache.kafka.common.config.ConfigException;

/**
 * The table join's options: the view (its two tables, join columns, columns, key, filters, join type), how its
 * changes are published, and the replica that captures both tables ({@code replica.*}, as the enrichment's).
 */
public final class TableJoinConfig extends AbstractConfig {
    public static final String CONNECTOR_NAME = "name";
    public static final String TOPIC = "view.topic";
    public static final String LEFT_TABLE = "view.left.table";
    public static final String RIGHT_TABLE = "view.right.table";
    public static final String LEFT_JOIN_COLUMNS = "view.left.join.columns";
    public static final String RIGHT_JOIN_COLUMNS = "view.right.join.columns";
    public static final String JOIN_TYPE = "view.join.type";
    public static final String COLUMNS = "view.columns";
    public static final String KEY = "view.key";
    public static final String FILTER = "view.filter";
    public static final String ENCODING = "view.encoding";
    public static final String OP_FIELD = "view.op.field";
    public static final String LEFT_INSERT_ONLY = "view.left.insert.only";
    public static final String RIGHT_INSERT_ONLY = "view.right.insert.only";
    public static final String BATCH_SIZE = "view.batch.size";
    public static final String POLL_INTERVAL_MS = "view.poll.interval.ms";

    private static final EnumOption<JoinType> TYPES = EnumOption.of(JoinType.class);
    private static final EnumOption<Encoding> ENCODINGS = EnumOption.of(Encoding.class);

    public static final ConfigDef CONFIG_DEF = addTo(ReplicaConfig.addTo(new ConfigDef()));

    static ConfigDef addTo(ConfigDef def) {
        String g = "View";
        int o = 0;
        def.define(TOPIC, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, OptionalText.nonBlank("a topic name"), Importance.HIGH,
                "The topic the view's changes are written to. Create it beforehand (or let the worker create it) with as"
                        + " many partitions as the consumers need: records are keyed by the view key, so one row's changes stay"
                        + " in order in one partition.", g, ++o, Width.MEDIUM, "View topic");
        def.define(LEFT_TABLE, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, QualifiedTables.one("public.posts"), Importance.HIGH,
                "The view's left table, as schema.table; it must be one of replica.tables. In a LEFT view every row of it"
                        + " is in the view.", g, ++o, Width.MEDIUM, "Left table");
        def.define(RIGHT_TABLE, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, QualifiedTables.one("public.posts"), Importance.HIGH,
                "The view's right table, as schema.table; it must be one of replica.tables.", g, ++o, Width.MEDIUM, "Right table");
        def.define(LEFT_JOIN_COLUMNS, Type.LIST, ConfigDef.NO_DEFAULT_VALUE, nonEmptyList(), Importance.HIGH,
                "Columns of the left table compared for equality, in pairs, with view.right.join.columns (the first with the"
                        + " first...). A row with NULL in one of them matches nothing, as in SQL. The replica keeps an index on them.",
                g, ++o, Width.MEDIUM, "Left join columns");
        def.define(RIGHT_JOIN_COLUMNS, Type.LIST, ConfigDef.NO_DEFAULT_VALUE, nonEmptyList(), Importance.HIGH,
                "Columns of the right table compared with view.left.join.columns, in the same order.", g, ++o, Width.MEDIUM,
                "Right join columns");
        def.define(JOIN_TYPE, Type.STRING, JoinType.INNER.name(), TYPES, Importance.HIGH,
                "INNER: a row per matching pair. LEFT: also a row per left row without a match, its right columns NULL; it"
                        + " needs the right join columns to be the right table's primary key (one match at most per left row) and"
                        + " a view.key of left columns.", g, ++o, Width.SHORT, "Join type");
        def.define(COLUMNS, Type.LIST, ConfigDef.NO_DEFAULT_VALUE, nonEmptyList(), Importance.HIGH,
                "The view's columns, in order, each 'table.column' or 'table.column AS name', where table is the table's name"
                        + " without its schema (posts.id AS post_id). Each keeps its source column's type.", g, ++o, Width.LONG,
                "Columns");
        def.define(KEY, Type.LIST, ConfigDef.NO_DEFAULT_VALUE, nonEmptyList(), Importance.HIGH,
                "Output columns (names from view.columns) that identify a view row: the record key. They must determine the"
                        + " primary key of both tables (a join column counts when its partner is in the key); validation reads the"
                        + " primary keys from the source database and names any missing column.", g, ++o, Width.MEDIUM, "View key");
        def.define(FILTER, Type.LIST, "", Importance.MEDIUM,
                "Optional equality filters, each 'table.column=value', restricting that table's rows before the join (all must"
                        + " hold). The column's value is compared as text with value as written.", g, ++o, Width.LONG, "Filter");
        def.define(ENCODING, Type.STRING, Encoding.UPSERT.name(), ENCODINGS, Importance.HIGH,
                "How changes are written. UPSERT: key = view key, value = the row or a tombstone when it leaves the view (for a"
                        + " compacted topic, an upsert sink, Kafka Streams' KTable). RETRACT: each change as the rows it removes and"
                        + " adds, with view.op.field holding +I, -U, +U or -D (for consumers that aggregate, as Flink's retract"
                        + " streams). APPEND: new rows only; refused unless the view can never update or delete a row (INNER, both"
                        + " tables insert-only).", g, ++o, Width.SHORT, "Encoding");
        def.define(OP_FIELD, Type.STRING, "__op", OptionalText.nonBlank("a field name"), Importance.LOW,
                "The value field that holds a RETRACT record's operation; must not be a view column.", g, ++o, Width.SHORT,
                "Op field");
        def.define(LEFT_INSERT_ONLY, Type.BOOLEAN, false, Importance.LOW,
                "Declares that the left table only ever gets inserts (an event log). Needed for APPEND; an update or delete of"
                        + " it then fails the task with its position.", g, ++o, Width.SHORT, "Left insert-only");
        def.define(RIGHT_INSERT_ONLY, Type.BOOLEAN, false, Importance.LOW,
                "Declares that the right table only ever gets inserts; as view.left.insert.only.", g, ++o, Width.SHORT,
                "Right insert-only");
        def.define(BATCH_SIZE, Type.INT, 1000, ConfigDef.Range.between(1, 100_000), Importance.LOW,
                "At most this many records per poll, and so per Kafka transaction. A change that fans out to more rows (a post"
                        + " of a user with a million followers) is streamed over several polls, never held whole.", g, ++o,
                Width.SHORT, "Batch size");
        def.define(POLL_INTERVAL_MS, Type.LONG, 200L, ConfigDef.Range.between(1, 60_000), Importance.LOW,
                "How long a poll waits for the replica's watermark to pass new changes before it returns no records.", g, ++o,
                Width.SHORT, "Poll interval");
        return def;
    }

    private final ViewDefinition view;

    public TableJoinConfig(Map<?, ?> props) {
        super(CONFIG_DEF, props);
        this.view = define();
    }

    public String viewName() {
        Object n = originals().get(CONNECTOR_NAME);
        return n == null ? "table-join" : n.toString();
    }

    public ViewDefinition view() {
        return view;
    }

    public String topic() {
        return getString(TOPIC);
    }

    public String opField() {
        return getString(OP_FIELD);
    }

    public int batchSize() {
        return getInt(BATCH_SIZE);
    }

    public long pollIntervalMs() {
        return getLong(POLL_INTERVAL_MS);
    }

    private ViewDefinition define() {
        String leftTable = getString(LEFT_TABLE).trim();
        String rightTable = getString(RIGHT_TABLE).trim();
        String leftName = unqualified(leftTable);
        String rightName = unqualified(rightTable);
        List<OutputColumn> columns = new ArrayList<>();
        for (String c : getList(COLUMNS)) {
            try {
                columns.add(OutputColumn.parse(c, leftName, rightName));
            } catch (IllegalArgumentException e) {
                throw new ConfigException(COLUMNS, c, e.getMessage());
            }
        }
        List<ViewSide.Filter> leftFilters = new ArrayList<>();
        List<ViewSide.Filter> rightFilters = new ArrayList<>();
        for (String f : getList(FILTER)) {
            int eq = f.indexOf('=');
            OutputColumn c;
            try {
                if (eq <= 0) {
                    throw new IllegalArgumentException("'" + f + "' is not table.column=value");
                }
                c = OutputColumn.parse(f.substring(0, eq), leftName, rightName);
            } catch (IllegalArgumentException e) {
                throw new ConfigException(FILTER, f, e.getMessage() + "; write table.column=value, e.g. posts.visibility=public");
            }
            (c.left() ? leftFilters : rightFilters).add(new ViewSide.Filter(c.column(), f.substring(eq + 1).trim()));
        }
        ViewSide left = new ViewSide(leftTable, leftName, trimmed(getList(LEFT_JOIN_COLUMNS)), leftFilters, getBoolean(LEFT_INSERT_ONLY));
        ViewSide right = new ViewSide(rightTable, rightName, trimmed(getList(RIGHT_JOIN_COLUMNS)), rightFilters, getBoolean(RIGHT_INSERT_ONLY));
        ViewDefinition v = new ViewDefinition(left, right, TYPES.parse(JOIN_TYPE, getString(JOIN_TYPE)), columns,
                trimmed(getList(KEY)), ENCODINGS.parse(ENCODING, getString(ENCODING)));
        for (OutputColumn c : columns) {
            if (c.name().equals(opField()) && v.encoding() == Encoding.RETRACT) {
                throw new ConfigException(OP_FIELD, opField(), "is also a view column; rename the column with AS or set another view.op.field");
            }
        }
        return v;
    }

    private static List<String> trimmed(List<String> in) {
        return in.stream().map(String::trim).filter(s -> !s.isEmpty()).toList();
    }

    private static String unqualified(String table) {
        return table.substring(table.lastIndexOf('.') + 1);
    }

    private static ConfigDef.Validator nonEmptyList() {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (!(value instanceof List<?> l) || l.stream().allMatch(x -> x == null || x.toString().isBlank())) {
                    throw new ConfigException(name, value, "give at least one entry");
                }
            }

            @Override
            public String toString() {
                return "a non-empty list";
            }
        };
    }
}
