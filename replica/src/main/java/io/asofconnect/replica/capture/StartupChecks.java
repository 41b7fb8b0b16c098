package io.asofconnect.replica.capture;

import io.asofconnect.common.lookup.IndexDeclaration;
import io.asofconnect.replica.config.ReplicaConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.errors.ConnectException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Checks the source before the engine starts, so that a misconfiguration fails fast with its fix instead
 * of surfacing later as an engine retry loop: reachability and credentials, {@code wal_level}, the
 * REPLICATION attribute, the tables and their keys, and the slot.
 */
public final class StartupChecks {
    private static final Logger LOG = LoggerFactory.getLogger(StartupChecks.class);

    /** What the checks found about the source's slot and server. */
    public record SourceState(Optional<String> systemIdentifier, Optional<SlotState> slot) {
    }

    /** The slot as {@code pg_replication_slots} shows it. */
    public record SlotState(boolean active, Integer activePid, String walStatus, Long confirmedFlushLsn, String plugin, String database) {
    }

    private final ReplicaConfig config;
    private final PgConnector connector;

    public StartupChecks(ReplicaConfig config, PgConnector connector) {
        this.config = config;
        this.connector = connector;
    }

    /** Runs every check; throws {@link ConnectException} or {@link ConfigException} naming the fix. */
    public SourceState run() {
        try (Connection c = connector.openOrExplain("start-up checks")) {
            checkWalLevel(c);
            checkRole(c);
            checkTables(c);
            Optional<SlotState> slot = awaitSlotReleased(c);
            if (slot.isPresent()) {
                checkSlotUsable(slot.get());
            } else {
                checkFreeSlot(c);
            }
            return new SourceState(systemIdentifier(c), slot);
        } catch (SQLException e) {
            throw new ConnectException("replica '" + config.name() + "': a start-up check failed on " + config.hostname() + ":"
                    + config.port() + "/" + config.dbname() + ": " + e.getMessage(), e);
        }
    }

    /**
     * The planner's estimate of the captured tables' rows ({@code pg_class.reltuples}, summed), for the initial
     * snapshot's progress; -1 when it cannot be read or a table was never analyzed.
     */
    public long estimatedRows() {
        long sum = 0;
        try (Connection c = connector.openOrExplain("row estimate");
             PreparedStatement ps = c.prepareStatement("SELECT c.reltuples::bigint FROM pg_class c JOIN pg_namespace n"
                     + " ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relname = ?")) {
            for (String table : config.tables()) {
                int dot = table.indexOf('.');
                ps.setString(1, table.substring(0, dot));
                ps.setString(2, table.substring(dot + 1));
                try (ResultSet rs = ps.executeQuery()) {
                    long rows = rs.next() ? rs.getLong(1) : -1;
                    if (rows < 0) {
                        return -1;
                    }
                    sum += rows;
                }
            }
            return sum;
        } catch (SQLException | RuntimeException e) {
            return -1;
        }
    }

    /** Reads the slot again (after the store was opened, or before a restart). */
    public SourceState sourceState() {
        try (Connection c = connector.openOrExplain("slot check")) {
            return new SourceState(systemIdentifier(c), slot(c));
        } catch (SQLException e) {
            throw new ConnectException("replica '" + config.name() + "': reading slot " + config.slotName() + " failed: " + e.getMessage(), e);
        }
    }

    private void checkWalLevel(Connection c) throws SQLException {
        String level = single(c, "SHOW wal_level");
        if (!"logical".equals(level)) {
            throw new ConnectException("replica '" + config.name() + "': the source server runs with wal_level=" + level
                    + "; logical decoding needs wal_level=logical: set wal_level=logical in postgresql.conf (or ALTER SYSTEM SET"
                    + " wal_level = logical) and restart Postgres");
        }
    }

    private void checkRole(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT rolreplication, rolsuper FROM pg_roles WHERE rolname = current_user");
             ResultSet rs = ps.executeQuery()) {
            if (rs.next() && !rs.getBoolean(1) && !rs.getBoolean(2)) {
                throw new ConnectException("replica '" + config.name() + "': user '" + config.user() + "' may not stream changes:"
                        + " it lacks the REPLICATION attribute; run ALTER ROLE <user> REPLICATION as a superuser, or set "
                        + ReplicaConfig.USER + " to a user that has it");
            }
        }
    }

    private void checkTables(Connection c) throws SQLException {
        List<String> problems = new ArrayList<>();
        Map<String, List<String>> keyColumns = config.keyColumns();
        for (String table : config.tables()) {
            int dot = table.indexOf('.');
            String schema = table.substring(0, dot);
            String name = table.substring(dot + 1);
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT c.oid, c.relreplident, EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)"
                            + " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                            + " WHERE n.nspname = ? AND c.relname = ? AND c.relkind IN ('r', 'p')")) {
                ps.setString(1, schema);
                ps.setString(2, name);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        problems.add("table " + table + " does not exist (or is not a table) in database " + config.dbname()
                                + "; fix " + ReplicaConfig.TABLES + " or create it");
                        continue;
                    }
                    long oid = rs.getLong(1);
                    String identity = rs.getString(2);
                    boolean hasPk = rs.getBoolean(3);
                    List<String> keys = keyColumns.get(table);
                    if (!hasPk && keys == null) {
                        problems.add("table " + table + " has no primary key; add one, or name its key columns in "
                                + ReplicaConfig.KEY_COLUMNS + " as " + table + ":col1,col2");
                    } else if (!hasPk && !"f".equals(identity) && !"i".equals(identity)) {
                        problems.add("table " + table + " has no primary key, so updates and deletes carry no key; run ALTER TABLE "
                                + PgConnector.quoteIdent(schema) + "." + PgConnector.quoteIdent(name) + " REPLICA IDENTITY FULL");
                    }
                    for (String col : compositeColumns(c, oid)) {
                        problems.add("column " + col + " of table " + table + " has a composite type, which Debezium cannot"
                                + " capture (it would drop the column silently); change its type or leave the table out");
                    }
                    List<String> wanted = new ArrayList<>();
                    if (keys != null) {
                        wanted.addAll(keys);
                    }
                    if (config.validFrom() == ReplicaConfig.ValidFrom.COLUMN) {
                        wanted.add(config.validFromColumn());
                    }
                    for (String col : wanted) {
                        if (!columnExists(c, oid, col)) {
                            problems.add("table " + table + " has no column " + col + " (named in "
                                    + (keys != null && keys.contains(col) ? ReplicaConfig.KEY_COLUMNS : ReplicaConfig.VALID_FROM_COLUMN) + ")");
                        }
                    }
                    for (IndexDeclaration index : config.indexes()) {
                        if (!index.covers(table)) {
                            continue;
                        }
                        for (String col : index.columns()) {
                            if (!columnExists(c, oid, col)) {
                                problems.add("table " + table + " has no column " + col + " (named by the index " + index + " in "
                                        + ReplicaConfig.INDEXES + "; columns are named as Postgres stores them, case-sensitive)");
                            }
                        }
                    }
                }
            }
        }
        if (!problems.isEmpty()) {
            throw new ConfigException("replica '" + config.name() + "': " + String.join("; ", problems));
        }
    }

    private static List<String> compositeColumns(Connection c, long oid) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT a.attname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
                        + " WHERE a.attrelid = ? AND a.attnum > 0 AND NOT a.attisdropped AND t.typtype = 'c' ORDER BY a.attnum")) {
            ps.setLong(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        }
        return out;
    }

    private static boolean columnExists(Connection c, long oid, String column) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT 1 FROM pg_attribute WHERE attrelid = ? AND attname = ? AND attnum > 0 AND NOT attisdropped")) {
            ps.setLong(1, oid);
            ps.setString(2, column);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    private Optional<String> systemIdentifier(Connection c) {
        try {
            return Optional.ofNullable(single(c, "SELECT system_identifier::text FROM pg_control_system()"));
        } catch (SQLException e) {
            // Not every role may read pg_control_system(); the slot checks still catch a changed server.
            LOG.debug("pg_control_system() not readable", e);
            return Optional.empty();
        }
    }

    private Optional<SlotState> slot(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT active, active_pid, wal_status, confirmed_flush_lsn::text, plugin, database"
                        + " FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, config.slotName());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                int pid = rs.getInt(2);
                Integer activePid = rs.wasNull() ? null : pid;
                String lsn = rs.getString(4);
                return Optional.of(new SlotState(rs.getBoolean(1), activePid, rs.getString(3),
                        lsn == null ? null : parseLsn(lsn), rs.getString(5), rs.getString(6)));
            }
        }
    }

    /**
     * After a crash of the previous reader its walsender may hold the slot for a moment longer; waits for that,
     * bounded by the connect timeout (at most 10 s), before calling the slot in use.
     */
    private Optional<SlotState> awaitSlotReleased(Connection c) throws SQLException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(Math.min(10_000, config.connectTimeoutMs()));
        while (true) {
            Optional<SlotState> slot = slot(c);
            if (slot.isEmpty() || !slot.get().active() || System.nanoTime() > deadline) {
                return slot;
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return slot;
            }
        }
    }

    /** Debezium would retry slot creation forever when the server has no slot left; say so at once instead. */
    private void checkFreeSlot(Connection c) throws SQLException {
        int max = Integer.parseInt(single(c, "SELECT current_setting('max_replication_slots')"));
        int used = Integer.parseInt(single(c, "SELECT count(*) FROM pg_replication_slots"));
        if (used >= max) {
            throw new ConnectException("replica '" + config.name() + "': replication slot " + config.slotName()
                    + " does not exist and cannot be created: all " + max + " replication slots of the server are in use."
                    + " Drop slots nobody reads (SELECT slot_name, active FROM pg_replication_slots; then"
                    + " SELECT pg_drop_replication_slot('<name>')) or raise max_replication_slots in postgresql.conf and restart the server");
        }
    }

    private void checkSlotUsable(SlotState slot) {
        if (slot.active()) {
            throw new ConnectException("replica '" + config.name() + "': replication slot " + config.slotName()
                    + " is in use by another process (walsender pid " + slot.activePid() + "); another replica or connector reads"
                    + " it. Give this replica its own " + ReplicaConfig.SLOT_NAME + ", or stop the other reader"
                    + " (SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '" + config.slotName() + "')");
        }
        if (!"pgoutput".equals(slot.plugin())) {
            throw new ConnectException("replica '" + config.name() + "': replication slot " + config.slotName() + " uses plugin "
                    + slot.plugin() + ", the replica needs pgoutput; choose another " + ReplicaConfig.SLOT_NAME);
        }
        if (!config.dbname().equals(slot.database())) {
            throw new ConnectException("replica '" + config.name() + "': replication slot " + config.slotName()
                    + " belongs to database " + slot.database() + ", not " + config.dbname() + "; choose another " + ReplicaConfig.SLOT_NAME);
        }
    }

    /** Drops the slot if it exists and nobody reads it. */
    public void dropSlot() {
        try (Connection c = connector.openOrExplain("slot drop");
             PreparedStatement ps = c.prepareStatement(
                     "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ? AND NOT active")) {
            ps.setString(1, config.slotName());
            ps.execute();
            LOG.info("Dropped replication slot {}", config.slotName());
        } catch (SQLException e) {
            throw new ConnectException("replica '" + config.name() + "': dropping replication slot " + config.slotName()
                    + " failed: " + e.getMessage(), e);
        }
    }

    private static String single(Connection c, String sql) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            return rs.next() ? rs.getString(1) : null;
        }
    }

    /** Postgres' {@code 16/B374D848} form to a number. */
    public static long parseLsn(String text) {
        int slash = text.indexOf('/');
        return (Long.parseLong(text.substring(0, slash), 16) << 32) | Long.parseLong(text.substring(slash + 1), 16);
    }
}
