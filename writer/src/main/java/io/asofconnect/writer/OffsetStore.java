package io.asofconnect.writer;

import org.apache.kafka.common.TopicPartition;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;

/**
 * The sink's offsets and epochs in the target database (layout in {@link PostgresDialect}). All methods
 * run inside the caller's transaction; none commits.
 */
public final class OffsetStore {
    /** next_offset of a row that no flush has committed yet. */
    public static final long NO_OFFSET = -1L;

    /** What the row says: the owning epoch and the next offset to write ({@link #NO_OFFSET} if none yet). */
    public record Claim(long epoch, long nextOffset) {
    }

    private final PostgresDialect dialect;
    private final String table;
    private final String connectorName;

    OffsetStore(PostgresDialect dialect, String table, String connectorName) {
        this.dialect = dialect;
        this.table = table;
        this.connectorName = connectorName;
    }

    String qualifiedName() {
        return dialect.table(table);
    }

    /** Creates the table when it does not exist; checks first so that a user without CREATE can use an existing table. */
    void ensureTable(Connection c) throws SQLException {
        createIfAbsent(c, dialect.table(table), dialect.createOffsetsTable(table));
    }

    /** {@link SideTables#createIfAbsent}. */
    static void createIfAbsent(Connection c, String qualifiedName, String createStatement) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(PostgresDialect.tableExists())) {
            ps.setString(1, qualifiedName);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (rs.getBoolean(1)) {
                    return;
                }
            }
        }
        try (PreparedStatement lock = c.prepareStatement(PostgresDialect.ddlLock())) {
            lock.setString(1, qualifiedName);
            lock.execute();
        }
        try (PreparedStatement ps = c.prepareStatement(createStatement)) {
            ps.execute();
        }
    }

    /** Takes the partition over: raises its epoch (creating its row if absent) and returns the new claim. */
    Claim claim(Connection c, TopicPartition tp) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(dialect.claimEpoch(table))) {
            ps.setString(1, connectorName);
            ps.setString(2, tp.topic());
            ps.setInt(3, tp.partition());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Claim(rs.getLong(1), rs.getLong(2));
            }
        }
    }

    /** Moves the partition's next offset, only if {@code epoch} still owns it; false means fenced. */
    boolean advance(Connection c, TopicPartition tp, long epoch, long nextOffset) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(dialect.advanceOffset(table))) {
            ps.setLong(1, nextOffset);
            ps.setString(2, connectorName);
            ps.setString(3, tp.topic());
            ps.setInt(4, tp.partition());
            ps.setLong(5, epoch);
            return ps.executeUpdate() == 1;
        }
    }

    /**
     * Sets the partition's next offset ({@code null}: back to {@link #NO_OFFSET}, a reset), raising its epoch so
     * that any task holding it is fenced. The row is never deleted: a deleted row would start again at epoch 1
     * and let a zombie of that generation commit.
     */
    void overwrite(Connection c, TopicPartition tp, Long nextOffset) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(nextOffset == null ? dialect.resetOffset(table) : dialect.setOffset(table))) {
            ps.setString(1, connectorName);
            ps.setString(2, tp.topic());
            ps.setInt(3, tp.partition());
            if (nextOffset != null) {
                ps.setLong(4, nextOffset);
            }
            ps.executeUpdate();
        }
    }

    Optional<Claim> read(Connection c, TopicPartition tp) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(dialect.readOffset(table))) {
            ps.setString(1, connectorName);
            ps.setString(2, tp.topic());
            ps.setInt(3, tp.partition());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(new Claim(rs.getLong(1), rs.getLong(2))) : Optional.empty();
            }
        }
    }
}
