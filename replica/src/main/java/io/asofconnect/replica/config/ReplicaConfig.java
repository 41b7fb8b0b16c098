package io.asofconnect.replica.config;

import io.asofconnect.common.config.EnumOption;
import io.asofconnect.common.jdbc.JdbcDriverProperties;
import io.asofconnect.common.lookup.IndexDeclaration;
import io.asofconnect.common.config.OptionalText;
import io.asofconnect.common.config.QualifiedTables;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Every option of a replica, all prefixed {@code replica.}. The transform and the sink embed these keys
 * into their own {@link ConfigDef} with {@link #addTo(ConfigDef)}.
 *
 * <p>Only {@link #NAME} is required by the definition itself: a connector may name a replica that another
 * connector in the same worker already defined and give nothing else. A connector that defines a replica
 * must give the connection, tables and slot; {@link #requireDefinition()} checks that.
 */
public final class ReplicaConfig extends AbstractConfig {

    public static final String PREFIX = "replica.";
    public static final String DEBEZIUM_PREFIX = PREFIX + "debezium.";

    public static final String NAME = PREFIX + "name";
    public static final String HOSTNAME = PREFIX + "database.hostname";
    public static final String PORT = PREFIX + "database.port";
    public static final String USER = PREFIX + "database.user";
    public static final String PASSWORD = PREFIX + "database.password";
    public static final String DBNAME = PREFIX + "database.dbname";
    public static final String CONNECT_TIMEOUT_MS = PREFIX + "database.connect.timeout.ms";
    public static final String SSL_MODE = PREFIX + "database.sslmode";
    /** Debezium's default for {@code database.sslmode}, and pgjdbc's. */
    public static final String DEFAULT_SSL_MODE = "prefer";
    public static final String TABLES = PREFIX + "tables";
    public static final String KEY_COLUMNS = PREFIX + "key.columns";
    public static final String SLOT_NAME = PREFIX + "slot.name";
    public static final String PUBLICATION_NAME = PREFIX + "publication.name";
    public static final String PATH = PREFIX + "path";
    public static final String VALID_FROM = PREFIX + "valid.from";
    public static final String VALID_FROM_COLUMN = PREFIX + "valid.from.column";
    public static final String SNAPSHOT_VALID_FROM = PREFIX + "snapshot.valid.from";
    public static final String HISTORY_RETENTION_MS = PREFIX + "history.retention.ms";
    public static final String WATERMARK_INTERVAL_MS = PREFIX + "watermark.interval.ms";
    /**
     * Every record a sink-hosted enrichment receives waits for the next probe (read-your-writes), so the
     * interval is the hold time: at 1 s a partition's hold buffer filled and paused it, halving the sink.
     */
    public static final long WATERMARK_INTERVAL_MS_DEFAULT = 200L;
    public static final String WATERMARK_SAFETY_MARGIN_MS = PREFIX + "watermark.safety.margin.ms";
    public static final String COMMIT_INTERVAL_MS = PREFIX + "commit.interval.ms";
    public static final String COMMIT_MAX_RECORDS = PREFIX + "commit.max.records";
    public static final String ON_GAP = PREFIX + "on.gap";
    public static final String SLOT_DROP_ON_STOP = PREFIX + "slot.drop.on.stop";
    public static final String INDEXES = PREFIX + "indexes";
    public static final String FEED_TABLES = PREFIX + "feed.tables";
    /** The form of one {@link #INDEXES} entry, as its errors name it. */
    private static final String INDEX_FORM = "schema.table(column[,column...])";

    /** Where valid-from comes from for streamed changes. */
    public enum ValidFrom {
        /** The source transaction's commit time ({@code source.ts_ms}). */
        COMMIT_TIME,
        /**
         * The value of {@code replica.valid.from.column} in the row. Not deterministic: a change committed now
         * with a valid-from behind the watermark changes answers already given for those times.
         */
        COLUMN
    }

    /** The valid-from given to the rows of a snapshot. */
    public enum SnapshotValidFrom {
        /** Valid since {@link io.asofconnect.common.lookup.Version#BEGINNING_OF_TIME}: every lookup finds them. */
        BEGINNING_OF_TIME,
        /** Valid from the time the snapshot read them; history starts at the first watermark after the snapshot. */
        SNAPSHOT_TIME
    }

    /** What to do when the stored history cannot be continued from the slot without missing changes. */
    public enum OnGap {
        /** Refuse to start, with a message explaining the gap. */
        FAIL,
        /**
         * Quarantine the store file and take a new snapshot; history restarts after it. The slot is dropped (and
         * recreated by the snapshot) only when the server reports it {@code wal_status = lost}; otherwise the
         * existing slot, or a new one if it is missing, carries the new snapshot.
         */
        REBUILD
    }

    /** Debezium options the replica sets itself; giving them under {@code replica.debezium.} is an error. */
    static final Set<String> RESERVED_DEBEZIUM_KEYS = Set.of(
            "connector.class", "name", "slot.name", "publication.name", "table.include.list", "plugin.name",
            "message.key.columns", "topic.prefix", "database.hostname", "database.port", "database.user",
            "database.password", "database.dbname", "tombstones.on.delete", "message.prefix.include.list",
            "publication.autocreate.mode", "lsn.flush.mode", "snapshot.mode", "database.sslmode", "driver.sslmode");

    /**
     * Prefixes under which Debezium 3.6 hands a property, prefix stripped, to the JDBC driver: its own
     * {@code database.*} options and the {@code driver.*} pass-through. The bare name is checked too.
     */
    private static final List<String> DRIVER_PASS_THROUGH_PREFIXES = List.of("", "database.", "driver.");

    private static final Pattern SLOT = Pattern.compile("[a-z0-9_]{1,63}");
    private static final Pattern REPLICA_NAME = Pattern.compile("[A-Za-z0-9_.-]{1,100}");
    private static final Pattern COLUMN = Pattern.compile("[A-Za-z_][A-Za-z0-9_$]{0,62}");
    /** DNS labels (underscores allowed: container and service names have them), dot-separated. */
    private static final Pattern DNS_NAME = Pattern.compile(
            "(?=.{1,253}\\.?$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\\.?");
    private static final Pattern IPV4 = Pattern.compile("(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])");
    private static final Pattern BRACKETED_IPV6 = Pattern.compile("\\[[0-9A-Fa-f:.]{2,45}]");
    /**
     * Characters that would end the database part of a JDBC URL that Debezium builds without encoding, and
     * {@code +}, which pgjdbc decodes to a space there while our encoded URL keeps it (two databases).
     */
    private static final Pattern URL_SAFE_DBNAME = Pattern.compile("(?=.*\\S)[^?&#/\\\\%+\\p{Cntrl}]+");

    private static final EnumOption<ValidFrom> VALID_FROM_VALUES = EnumOption.of(ValidFrom.class);
    private static final EnumOption<SnapshotValidFrom> SNAPSHOT_VALID_FROM_VALUES = EnumOption.of(SnapshotValidFrom.class);
    private static final EnumOption<OnGap> ON_GAP_VALUES = EnumOption.of(OnGap.class);

    public static final ConfigDef CONFIG_DEF = addTo(new ConfigDef());

    /** Adds every replica option to {@code def} and returns it. */
    public static ConfigDef addTo(ConfigDef def) {
        String g = "Replica";
        int o = 0;
        return def
                .define(NAME, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, patternValidator(REPLICA_NAME, "letters, digits, '_', '.', '-' (at most 100)"),
                        Importance.HIGH, "The replica's identity in this worker. Connectors that give the same name share one"
                                + " replica (one slot, one store file); a connector may give only this key to use a replica"
                                + " that another connector in the worker defines.", g, ++o, ConfigDef.Width.MEDIUM, "Replica name")
                .define(HOSTNAME, Type.STRING, null, nullOr(hostValidator()), Importance.HIGH,
                        "Host name of the source Postgres server: a DNS name, an IPv4 address or an IPv6 address in brackets"
                                + " ([::1]). Required when this connector defines the replica.", g, ++o, ConfigDef.Width.MEDIUM, "Host")
                .define(PORT, Type.INT, 5432, ConfigDef.Range.between(1, 65535), Importance.MEDIUM,
                        "Port of the source Postgres server (its port setting, 5432 unless changed); it must be reachable from every worker.", g, ++o, ConfigDef.Width.SHORT, "Port")
                .define(USER, Type.STRING, null, OptionalText.nonBlank("a Postgres role name"), Importance.HIGH,
                        "Postgres user; it needs the REPLICATION attribute (or superuser), SELECT on the tables,"
                                + " and CREATE on the database if the publication does not exist yet.", g, ++o, ConfigDef.Width.MEDIUM, "User")
                .define(PASSWORD, Type.PASSWORD, null, Importance.HIGH,
                        "Password of replica.database.user. Use a config provider reference such as ${file:...} rather than the clear text.",
                        g, ++o, ConfigDef.Width.MEDIUM, "Password")
                .define(DBNAME, Type.STRING, null, nullOr(patternValidator(URL_SAFE_DBNAME,
                                "a database name, not blank, without '?', '&', '#', '/', '\\', '%', '+' or control characters")), Importance.HIGH,
                        "Database that holds the tables. Required when this connector defines the replica. Debezium puts it into a"
                                + " JDBC URL as it is, hence the characters that would end the URL's path, or that the driver decodes there ('+'), are refused.",
                        g, ++o, ConfigDef.Width.MEDIUM, "Database")
                .define(SSL_MODE, Type.STRING, DEFAULT_SSL_MODE, JdbcDriverProperties.sslModeValidator(), Importance.MEDIUM,
                        "TLS mode of every connection to the source (the capture engine's and the replica's own), as pgjdbc's sslmode: "
                                + String.join(", ", JdbcDriverProperties.SSL_MODES) + ". The default, " + DEFAULT_SSL_MODE + " (Debezium's"
                                + " and pgjdbc's), falls back to an unencrypted connection and does not check the server; disable, allow and"
                                + " prefer log a warning at start. Use verify-full in production (the CA via "
                                + DEBEZIUM_PREFIX + "database.sslrootcert; sslcert, sslkey and sslpassword likewise, all used by every"
                                + " connection).", g, ++o, ConfigDef.Width.SHORT, "TLS mode")
                .define(CONNECT_TIMEOUT_MS, Type.LONG, 10_000L, ConfigDef.Range.between(100, 600_000), Importance.LOW,
                        "Bound on connecting to Postgres during the start-up checks and for the watermark prober, in milliseconds.",
                        g, ++o, ConfigDef.Width.SHORT, "Connect timeout")
                .define(TABLES, Type.LIST, Collections.emptyList(), QualifiedTables.list("public.customers", ""), Importance.HIGH,
                        "Tables to capture, comma-separated, each as schema.table (e.g. public.customers). Required when this"
                                + " connector defines the replica.", g, ++o, ConfigDef.Width.LONG, "Tables")
                .define(KEY_COLUMNS, Type.STRING, "", KeyColumns.VALIDATOR, Importance.MEDIUM,
                        "Key columns for tables without a primary key, as schema.table:col1,col2;schema.other:col. Such tables"
                                + " also need REPLICA IDENTITY FULL (or USING INDEX) so that updates and deletes carry the key.",
                        g, ++o, ConfigDef.Width.LONG, "Key columns")
                .define(SLOT_NAME, Type.STRING, null, nullOr(patternValidator(SLOT, "lower-case letters, digits and '_', at most 63")),
                        Importance.HIGH, "Name of the logical replication slot this replica owns. Required when this connector defines"
                                + " the replica; no two replicas may share a slot.", g, ++o, ConfigDef.Width.MEDIUM, "Slot")
                .define(PUBLICATION_NAME, Type.STRING, null, nullOr(patternValidator(SLOT, "lower-case letters, digits and '_', at most 63")),
                        Importance.LOW, "Name of the publication. Default: the slot name followed by _pub. Created for exactly the"
                                + " captured tables if missing.", g, ++o, ConfigDef.Width.MEDIUM, "Publication")
                .define(PATH, Type.STRING, null, nullOr(pathValidator()), Importance.HIGH,
                        "Directory of the replica's store file (<replica.name>.mapdb and its write-ahead log). It must be durable and"
                                + " private to this worker. Default (leave it unset): asof-replica under the worker's working directory (user.dir)."
                                + " Never point it at a temporary directory: losing the file means a new snapshot and a history that"
                                + " restarts then.", g, ++o, ConfigDef.Width.LONG, "Store directory")
                .define(VALID_FROM, Type.STRING, ValidFrom.COMMIT_TIME.name(), VALID_FROM_VALUES, Importance.MEDIUM,
                        "Where a version's valid-from comes from: COMMIT_TIME (default) the source transaction's commit time;"
                                + " COLUMN the value of " + VALID_FROM_COLUMN + " (epoch millis, timestamp or timestamptz). COLUMN gives"
                                + " up determinism: a change committed now with a valid-from at or before the watermark changes the"
                                + " answer for times the watermark has already passed, so a replay may enrich differently than the"
                                + " first run. Use COLUMN only if such back-dated changes never happen or you accept that. One of: "
                                + VALID_FROM_VALUES + ".", g, ++o, ConfigDef.Width.SHORT, "Valid-from")
                .define(VALID_FROM_COLUMN, Type.STRING, null, nullOr(patternValidator(COLUMN, "a column name: letters, digits, '_' or '$',"
                                + " not starting with a digit, at most 63")), Importance.LOW,
                        "The column holding valid-from when " + VALID_FROM + "=COLUMN, as Postgres names it (case-sensitive, unquoted);"
                                + " every captured table must have it, NOT NULL.",
                        g, ++o, ConfigDef.Width.MEDIUM, "Valid-from column")
                .define(SNAPSHOT_VALID_FROM, Type.STRING, SnapshotValidFrom.BEGINNING_OF_TIME.name(), SNAPSHOT_VALID_FROM_VALUES,
                        Importance.MEDIUM, "Valid-from of the rows read by the initial snapshot: BEGINNING_OF_TIME (default) makes"
                                + " them answer lookups for any earlier time (the table's past is unknown; dimension tables are"
                                + " usually wanted this way); SNAPSHOT_TIME makes them valid from the snapshot and lookups before the"
                                + " first watermark after it OutOfHistory. One of: " + SNAPSHOT_VALID_FROM_VALUES + ".",
                        g, ++o, ConfigDef.Width.SHORT, "Snapshot valid-from")
                .define(HISTORY_RETENTION_MS, Type.LONG, 7L * 24 * 3600 * 1000, ConfigDef.Range.atLeast(0), Importance.MEDIUM,
                        "How long versions are kept behind the watermark, in milliseconds (default 7 days). Lookups older than the"
                                + " watermark minus this answer OutOfHistory. Make it longer than the largest event-time lag you replay.",
                        g, ++o, ConfigDef.Width.SHORT, "Retention")
                .define(WATERMARK_INTERVAL_MS, Type.LONG, WATERMARK_INTERVAL_MS_DEFAULT, ConfigDef.Range.between(10, 3_600_000), Importance.MEDIUM,
                        "How often the watermark is probed (a logical decoding message through the slot), in milliseconds. It bounds"
                                + " how far the watermark trails the source while nobody waits for it, and keeps the slot advancing while"
                                + " the tables are idle. A record held for the watermark (read-your-writes, or an event time past it) asks"
                                + " for a probe of its own, at most one every 20 ms, so it waits about one probe's way through the slot"
                                + " rather than up to an interval. Each probe costs the source one small WAL message and one transaction id (its commit flushes"
                                + " the message to the walsender at once), and the replica one store commit."
                                + " Default: " + WATERMARK_INTERVAL_MS_DEFAULT + ".",
                        g, ++o, ConfigDef.Width.SHORT, "Watermark interval")
                .define(WATERMARK_SAFETY_MARGIN_MS, Type.LONG, 50L, ConfigDef.Range.between(0, 60_000), Importance.LOW,
                        "Subtracted from each probe's time: a commit takes its timestamp slightly before its WAL record is written,"
                                + " so a commit stamped just before a probe may still follow it in the WAL.",
                        g, ++o, ConfigDef.Width.SHORT, "Watermark safety margin")
                .define(COMMIT_INTERVAL_MS, Type.LONG, 1000L, ConfigDef.Range.between(0, 60_000), Importance.LOW,
                        "The longest time, in milliseconds, that applied changes wait for the store commit that makes them and"
                                + " their offsets durable; commits are also made whenever a watermark probe advances the watermark, at the"
                                + " end of the initial snapshot, and after " + COMMIT_MAX_RECORDS + " records. Larger values commit less"
                                + " often (faster ingest); after a crash the uncommitted changes are read again from the slot. 0 commits"
                                + " after every batch of the engine.",
                        g, ++o, ConfigDef.Width.SHORT, "Commit interval")
                .define(COMMIT_MAX_RECORDS, Type.INT, 20_000, ConfigDef.Range.between(1, 1_000_000), Importance.LOW,
                        "The most records applied before a store commit. The engine's records are held in memory until the"
                                + " commit that holds them (only then is the engine told they are processed), so this bounds that memory;"
                                + " lower it for a small heap and wide rows.",
                        g, ++o, ConfigDef.Width.SHORT, "Commit max records")
                .define(ON_GAP, Type.STRING, OnGap.FAIL.name(), ON_GAP_VALUES, Importance.MEDIUM,
                        "What to do when the store cannot be continued from the slot without a gap (slot dropped or recreated, WAL"
                                + " lost, a different server): FAIL (default) refuses to start and says why; REBUILD moves the file aside"
                                + " (<name>.mapdb.quarantined-<millis>) and takes a new snapshot, history restarting after it; the slot is"
                                + " dropped and recreated only when its wal_status is lost, otherwise the existing (or a newly created)"
                                + " slot is used. One of: " + ON_GAP_VALUES + ".",
                        g, ++o, ConfigDef.Width.SHORT, "On gap")
                .define(SLOT_DROP_ON_STOP, Type.BOOLEAN, false, Importance.LOW,
                        "Drop the slot when the last connector using the replica stops. Only for tests and demos: the next start"
                                + " then finds a gap.", g, ++o, ConfigDef.Width.SHORT, "Drop slot on stop")
                .define(INDEXES, Type.LIST, Collections.emptyList(), indexesValidator(), Importance.LOW,
                        "Secondary indexes the replica keeps in memory, each " + INDEX_FORM + " on a table of " + TABLES
                                + ", comma-separated (a comma inside the parentheses separates columns): the rows of the table by"
                                + " the values of those columns in any retained version, for a table-table join that probes one"
                                + " table by its join columns. Set by the table-join connector from its view definition;"
                                + " enrichment users leave it empty (the default), which costs nothing. Given with " + NAME + " alone"
                                + " (to share a replica another connector defines), it names indexes that replica must keep.",
                        g, ++o, ConfigDef.Width.LONG, "Indexes")
                .define(FEED_TABLES, Type.LIST, Collections.emptyList(), QualifiedTables.list("public.posts", "one of " + TABLES), Importance.LOW,
                        "Tables of " + TABLES + " whose changes the replica keeps in its change feed, comma-separated, each as"
                                + " schema.table: every retained version in one total order (commit order, then change order), which"
                                + " a table-table join reads to maintain its view. Set by the table-join connector from its view"
                                + " definition; enrichment users leave it empty (the default), which costs nothing. Given with "
                                + NAME + " alone, it names tables whose feed the replica another connector defines must keep.",
                        g, ++o, ConfigDef.Width.LONG, "Feed tables");
    }

    private final String name;
    private final String hostname;
    private final int port;
    private final String user;
    private final Password password;
    private final String dbname;
    private final long connectTimeoutMs;
    private final String sslMode;
    private final List<String> tables;
    private final Map<String, List<String>> keyColumns;
    private final String keyColumnsText;
    private final String slotName;
    private final String publicationName;
    private final Path directory;
    private final ValidFrom validFrom;
    private final String validFromColumn;
    private final SnapshotValidFrom snapshotValidFrom;
    private final long historyRetentionMs;
    private final long watermarkIntervalMs;
    private final long watermarkSafetyMarginMs;
    private final long commitIntervalMs;
    private final int commitMaxRecords;
    private final OnGap onGap;
    private final boolean slotDropOnStop;
    private final Map<String, String> debeziumOverrides;
    private final List<IndexDeclaration> indexes;
    private final Set<String> feedTables;

    public ReplicaConfig(Map<String, ?> props) {
        super(CONFIG_DEF, props, false);
        name = getString(NAME);
        hostname = getString(HOSTNAME);
        port = getInt(PORT);
        user = getString(USER);
        password = getPassword(PASSWORD);
        dbname = getString(DBNAME);
        connectTimeoutMs = getLong(CONNECT_TIMEOUT_MS);
        sslMode = getString(SSL_MODE).trim().toLowerCase(Locale.ROOT);
        tables = List.copyOf(getList(TABLES));
        keyColumnsText = getString(KEY_COLUMNS);
        keyColumns = KeyColumns.parse(KEY_COLUMNS, keyColumnsText);
        slotName = getString(SLOT_NAME);
        String pub = getString(PUBLICATION_NAME);
        publicationName = pub != null ? pub : (slotName == null ? null : slotName + "_pub");
        String dir = getString(PATH);
        directory = dir == null || dir.isBlank()
                ? Path.of(System.getProperty("user.dir"), "asof-replica").toAbsolutePath()
                : Path.of(dir).toAbsolutePath();
        validFrom = VALID_FROM_VALUES.parse(VALID_FROM, getString(VALID_FROM));
        validFromColumn = getString(VALID_FROM_COLUMN);
        snapshotValidFrom = SNAPSHOT_VALID_FROM_VALUES.parse(SNAPSHOT_VALID_FROM, getString(SNAPSHOT_VALID_FROM));
        historyRetentionMs = getLong(HISTORY_RETENTION_MS);
        watermarkIntervalMs = getLong(WATERMARK_INTERVAL_MS);
        watermarkSafetyMarginMs = getLong(WATERMARK_SAFETY_MARGIN_MS);
        commitIntervalMs = getLong(COMMIT_INTERVAL_MS);
        commitMaxRecords = getInt(COMMIT_MAX_RECORDS);
        onGap = ON_GAP_VALUES.parse(ON_GAP, getString(ON_GAP));
        slotDropOnStop = getBoolean(SLOT_DROP_ON_STOP);
        debeziumOverrides = debeziumOverrides(originals());
        indexes = parseIndexes(INDEXES, getList(INDEXES));
        feedTables = Collections.unmodifiableSet(new java.util.TreeSet<>(getList(FEED_TABLES)));
        if (validFrom == ValidFrom.COLUMN && (validFromColumn == null || validFromColumn.isBlank())) {
            throw new ConfigException(VALID_FROM_COLUMN, validFromColumn, VALID_FROM + "=COLUMN needs the column name in " + VALID_FROM_COLUMN);
        }
        for (String t : keyColumns.keySet()) {
            if (!tables.isEmpty() && !tables.contains(t)) {
                throw new ConfigException(KEY_COLUMNS, keyColumnsText, "table '" + t + "' is not in " + TABLES);
            }
        }
        // Without tables these props only name a replica defined elsewhere; ReplicaRegistry checks them against it.
        if (!tables.isEmpty()) {
            for (IndexDeclaration d : indexes) {
                if (tables.stream().noneMatch(d::covers)) {
                    throw new ConfigException(INDEXES, String.join(",", getList(INDEXES)), "the index " + d + " is on table '"
                            + d.table() + "', which is not in " + TABLES + " " + tables + "; index only captured tables");
                }
            }
            for (String t : feedTables) {
                if (tables.stream().noneMatch(c -> c.equalsIgnoreCase(t))) {
                    throw new ConfigException(FEED_TABLES, String.join(",", getList(FEED_TABLES)), "table '" + t
                            + "' is not in " + TABLES + " " + tables + "; the feed holds only captured tables");
                }
            }
        }
    }

    /**
     * The index declarations in {@code entries}. A LIST option splits its value at every comma, also at those
     * between an index's columns, so the pieces are joined again and split only at commas outside parentheses.
     */
    public static List<IndexDeclaration> parseIndexes(String key, List<?> entries) {
        String joined = String.join(",", entries.stream().map(String::valueOf).toList());
        List<String> parts = new ArrayList<>();
        int depth = 0;
        int from = 0;
        for (int i = 0; i < joined.length(); i++) {
            char ch = joined.charAt(i);
            if (ch == '(') {
                depth++;
            } else if (ch == ')') {
                depth--;
            }
            if (depth < 0 || depth > 1) {
                throw new ConfigException(key, joined, "parentheses do not pair up; write each index as " + INDEX_FORM
                        + ", indexes separated by commas");
            }
            if (ch == ',' && depth == 0) {
                parts.add(joined.substring(from, i));
                from = i + 1;
            }
        }
        if (depth != 0) {
            throw new ConfigException(key, joined, "an index is missing its closing parenthesis; write each index as " + INDEX_FORM);
        }
        parts.add(joined.substring(from));
        LinkedHashSet<IndexDeclaration> out = new LinkedHashSet<>();
        for (String part : parts) {
            if (part.isBlank()) {
                if (parts.size() == 1) {
                    break;
                }
                throw new ConfigException(key, joined, "an entry is empty; write each index as " + INDEX_FORM + ", separated by commas");
            }
            int open = part.indexOf('(');
            int close = part.lastIndexOf(')');
            if (open >= 0 && close > open && part.substring(open + 1, close).matches("(?s).*(^\\s*,|,\\s*,|,\\s*$).*")) {
                throw new ConfigException(key, joined, "'" + part.trim() + "' names an empty column: write " + INDEX_FORM);
            }
            IndexDeclaration d;
            try {
                d = IndexDeclaration.parse(part);
            } catch (IllegalArgumentException e) {
                String why = e.getMessage();
                throw new ConfigException(key, joined, why.contains(INDEX_FORM) ? why : why + "; write " + INDEX_FORM);
            }
            if (!isQualifiedTable(d.table())) {
                throw new ConfigException(key, joined, "the index " + d + " must name its table as schema.table, e.g. "
                        + "public.posts(author_id)");
            }
            out.add(d);
        }
        return List.copyOf(out);
    }

    private static ConfigDef.Validator indexesValidator() {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value instanceof List<?> list) {
                    parseIndexes(name, list);
                }
            }

            @Override
            public String toString() {
                return INDEX_FORM + "[," + INDEX_FORM + "...], each on a table of " + TABLES;
            }
        };
    }

    private static Map<String, String> debeziumOverrides(Map<String, Object> originals) {
        Map<String, String> out = new TreeMap<>();
        for (Map.Entry<String, Object> e : originals.entrySet()) {
            if (!e.getKey().startsWith(DEBEZIUM_PREFIX)) {
                continue;
            }
            String key = e.getKey().substring(DEBEZIUM_PREFIX.length());
            if ("snapshot.mode".equals(key)) {
                // Any mode but 'initial' may snapshot again over a store that already has history: every row
                // would be put once more at the snapshot's valid-from with a later position, and a lookup at a
                // time the watermark had already passed would change its answer after a restart.
                throw new ConfigException(e.getKey(), "(hidden)", "the replica always uses Debezium's snapshot.mode=initial:"
                        + " another mode could take a new snapshot over the stored history and change answers already given"
                        + " for times behind the watermark; remove " + e.getKey() + " (to start over, stop the replica and"
                        + " delete its store file under " + PATH + ")");
            }
            if (key.equals("database.sslmode") || key.equals("driver.sslmode")) {
                throw new ConfigException(e.getKey(), "(hidden)", "the replica sets the TLS mode of every connection from " + SSL_MODE
                        + "; remove " + e.getKey() + " and set " + SSL_MODE + " instead");
            }
            rejectDriverClassOrFileProperty(e.getKey(), key);
            if (RESERVED_DEBEZIUM_KEYS.contains(key) || key.startsWith("offset.storage")) {
                throw new ConfigException(e.getKey(), "(hidden)", "the replica sets the Debezium option '" + key + "' itself;"
                        + " remove " + e.getKey() + " and use the replica's own option where there is one"
                        + " (e.g. " + SLOT_NAME + ", " + TABLES + ", " + PUBLICATION_NAME + ")");
            }
            Object v = e.getValue();
            out.put(key, v instanceof Password p ? p.value() : v == null ? null : v.toString());
        }
        return Collections.unmodifiableMap(out);
    }

    /** Refuses a pass-through that Debezium would hand to pgjdbc and that loads a class or writes a file on the worker. */
    private static void rejectDriverClassOrFileProperty(String fullKey, String key) {
        String lower = key.toLowerCase(Locale.ROOT);
        for (String prefix : DRIVER_PASS_THROUGH_PREFIXES) {
            if (lower.startsWith(prefix) && JdbcDriverProperties.isForbidden(lower.substring(prefix.length()))) {
                throw new ConfigException(fullKey, "(hidden)", "is handed to the Postgres JDBC driver, where it loads a class or"
                        + " writes a file on the worker; remove " + fullKey + " (refused driver properties: "
                        + JdbcDriverProperties.describeForbidden() + ")");
            }
        }
    }

    /**
     * Whether these props define a replica, rather than only name one that another connector defines. The
     * indexes and feed tables a user needs do not define one: given with the name alone, they are what the
     * running replica must keep ({@link #missingFrom}).
     */
    public boolean isDefinition() {
        for (String k : originals().keySet()) {
            if (k.startsWith(PREFIX) && !k.equals(NAME) && !k.equals(INDEXES) && !k.equals(FEED_TABLES)) {
                return true;
            }
        }
        return false;
    }

    /** Checks that the options a defining connector must give are there. */
    public void requireDefinition() {
        requireSet(HOSTNAME, hostname);
        requireSet(USER, user);
        requireSet(DBNAME, dbname);
        requireSet(SLOT_NAME, slotName);
        if (tables.isEmpty()) {
            throw new ConfigException(TABLES, "", "list at least one table to capture, as schema.table, to define replica '" + name + "'");
        }
    }

    private void requireSet(String key, String value) {
        if (value == null || value.isBlank()) {
            throw new ConfigException(key, value, "is required to define replica '" + name + "' (only " + NAME
                    + " may be given alone, to share a replica another connector in this worker defines)");
        }
    }

    /**
     * The keys whose values differ between this and {@code other}: compared on the parsed values plus the
     * Debezium pass-through, so that "5432" and 5432 agree. Returns key names only, never values.
     */
    public Set<String> differingKeys(ReplicaConfig other) {
        Set<String> out = new java.util.TreeSet<>();
        for (String k : CONFIG_DEF.names()) {
            Object a = values().get(k);
            Object b = other.values().get(k);
            if (!java.util.Objects.equals(comparable(k, a), other.comparable(k, b))) {
                out.add(k);
            }
        }
        Set<String> dbz = new java.util.TreeSet<>(debeziumOverrides.keySet());
        dbz.addAll(other.debeziumOverrides.keySet());
        for (String k : dbz) {
            if (!java.util.Objects.equals(debeziumOverrides.get(k), other.debeziumOverrides.get(k))) {
                out.add(DEBEZIUM_PREFIX + k);
            }
        }
        return out;
    }

    private Object comparable(String key, Object v) {
        if (key.equals(INDEXES)) {
            // Parsed, so that "t(a,b)" and "t(a, b)" agree; order does not matter.
            return Set.copyOf(indexes);
        }
        if (key.equals(FEED_TABLES)) {
            return feedTables.stream().map(t -> t.toLowerCase(Locale.ROOT)).collect(java.util.stream.Collectors.toSet());
        }
        return v instanceof Password p ? p.value() : v;
    }

    /**
     * What of this config's indexes and feed tables the running replica configured by {@code running} lacks, as
     * lines naming each; empty when it keeps them all.
     */
    public List<String> missingFrom(ReplicaConfig running) {
        List<String> missing = new ArrayList<>();
        for (IndexDeclaration d : indexes) {
            if (!running.indexes.contains(d)) {
                missing.add("the index " + d + " (" + INDEXES + ")");
            }
        }
        for (String t : feedTables) {
            if (running.feedTables.stream().noneMatch(r -> r.equalsIgnoreCase(t))) {
                missing.add("the feed of table " + t + " (" + FEED_TABLES + ")");
            }
        }
        return missing;
    }

    static boolean isQualifiedTable(String t) {
        return QualifiedTables.isQualified(t);
    }

    private static ConfigDef.Validator patternValidator(Pattern p, String description) {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value == null || !p.matcher(value.toString()).matches()) {
                    throw new ConfigException(name, value, "must be " + description);
                }
            }

            @Override
            public String toString() {
                return description;
            }
        };
    }

    private static ConfigDef.Validator pathValidator() {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value == null || value.toString().isBlank()) {
                    throw new ConfigException(name, value, "must be a directory path, not blank; leave the option out to use the"
                            + " default (asof-replica under the worker's working directory)");
                }
                try {
                    Path.of(value.toString());
                } catch (java.nio.file.InvalidPathException e) {
                    throw new ConfigException(name, value, "is not a valid path on this system: " + e.getReason());
                }
            }

            @Override
            public String toString() {
                return "a directory path (absolute, or relative to the worker's working directory)";
            }
        };
    }

    /** A DNS name, an IPv4 address or a bracketed IPv6 address: nothing that could carry more into a JDBC URL. */
    static boolean isValidHost(String host) {
        if (host == null) {
            return false;
        }
        if (BRACKETED_IPV6.matcher(host).matches()) {
            String literal = host.substring(1, host.length() - 1);
            try {
                // A literal with a colon is parsed, never looked up; ::ffff:a.b.c.d comes back as an IPv4 address.
                return literal.contains(":") && java.net.InetAddress.getByName(literal) != null;
            } catch (java.net.UnknownHostException e) {
                return false;
            }
        }
        return IPV4.matcher(host).matches() || DNS_NAME.matcher(host).matches() && !host.matches("[0-9.]+");
    }

    private static ConfigDef.Validator hostValidator() {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (!isValidHost(value == null ? null : value.toString())) {
                    throw new ConfigException(name, value, "must be " + this);
                }
            }

            @Override
            public String toString() {
                return "a DNS name, an IPv4 address, or an IPv6 address in brackets";
            }
        };
    }

    private static ConfigDef.Validator nullOr(ConfigDef.Validator v) {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value != null) {
                    v.ensureValid(name, value);
                }
            }

            @Override
            public String toString() {
                return v.toString();
            }
        };
    }

    public String name() { return name; }
    public String hostname() { return hostname; }
    public int port() { return port; }
    public String user() { return user; }
    /** The password; never log it. Null when none is set. */
    public Password password() { return password; }
    public String dbname() { return dbname; }
    public long connectTimeoutMs() { return connectTimeoutMs; }
    /** pgjdbc's sslmode for every connection to the source, lower-case. */
    public String sslMode() { return sslMode; }
    public List<String> tables() { return tables; }
    public Map<String, List<String>> keyColumns() { return keyColumns; }
    public String keyColumnsText() { return keyColumnsText; }
    public String slotName() { return slotName; }
    public String publicationName() { return publicationName; }
    /** The directory holding the store file. */
    public Path directory() { return directory; }
    /** The store file. */
    public Path storeFile() { return directory.resolve(name + ".mapdb"); }
    public ValidFrom validFrom() { return validFrom; }
    public String validFromColumn() { return validFromColumn; }
    public SnapshotValidFrom snapshotValidFrom() { return snapshotValidFrom; }
    public long historyRetentionMs() { return historyRetentionMs; }
    public long watermarkIntervalMs() { return watermarkIntervalMs; }

    public long commitIntervalMs() { return commitIntervalMs; }

    public int commitMaxRecords() { return commitMaxRecords; }
    public long watermarkSafetyMarginMs() { return watermarkSafetyMarginMs; }
    public OnGap onGap() { return onGap; }
    public boolean slotDropOnStop() { return slotDropOnStop; }
    /** The secondary indexes the replica keeps ({@link #INDEXES}), without repeats. */
    public List<IndexDeclaration> indexes() { return indexes; }
    /** The tables of the change feed ({@link #FEED_TABLES}). */
    public Set<String> feedTables() { return feedTables; }
    /** Debezium options given under {@code replica.debezium.}, prefix stripped. */
    public Map<String, String> debeziumOverrides() { return debeziumOverrides; }

    /**
     * The JDBC URL of the source, without credentials or properties: the host is validated and the database
     * name percent-encoded (pgjdbc decodes it), so neither can add driver properties.
     */
    public String jdbcUrl() {
        return "jdbc:postgresql://" + hostname + ":" + port + "/" + URLEncoder.encode(dbname, StandardCharsets.UTF_8);
    }

    /** Names the replica and where it reads from; never the password. */
    @Override
    public String toString() {
        return "ReplicaConfig{name=" + name + ", source=" + hostname + ":" + port + "/" + dbname + ", slot=" + slotName
                + ", tables=" + tables + "}";
    }
}
