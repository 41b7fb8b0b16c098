package io.asofconnect.writer;

import org.apache.kafka.common.TopicPartition;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * A host's own tables, kept in the writer's transactions so that they commit with the rows and offsets or not at all
 * (the window join's held offsets, watermarks and late ledger). Every method runs inside the writer's transaction on
 * the connection it is given and must neither commit, roll back nor keep the connection. An exception from any of
 * them rolls the whole call back, as any other failure of the call would ({@link ExactlyOnceWriter}).
 *
 * <p>The tables belong in the offsets table's schema ({@link WriterSettings#tableSchema}); name them with
 * {@link PostgresDialect#qualified} and create them with {@link #createIfAbsent}.
 */
public interface SideTables {
    /** No side tables: the sink's. */
    SideTables NONE = new SideTables() {
        @Override
        public void ensure(Connection c) {
        }

        @Override
        public void read(Connection c, Collection<TopicPartition> partitions) {
        }

        @Override
        public void write(Connection c, List<PartitionState> dirty) {
        }

        @Override
        public void overwrite(Connection c, Map<TopicPartition, Long> nextOffsets) {
        }

        @Override
        public String toString() {
            return "SideTables.NONE";
        }
    };

    /**
     * Creates the tables if needed: in {@link ExactlyOnceWriter#claim} and {@link ExactlyOnceWriter#overwriteOffsets},
     * right after the offsets table.
     */
    void ensure(Connection c) throws SQLException;

    /**
     * Reads what the tables hold for these partitions: in {@link ExactlyOnceWriter#claim} once every partition's epoch
     * was taken (before that transaction commits), and in {@link ExactlyOnceWriter#reconcile} once every partition's
     * epoch was checked, so what it reads belongs to the epochs this writer holds.
     */
    void read(Connection c, Collection<TopicPartition> partitions) throws SQLException;

    /**
     * Writes these partitions' rows: in {@link ExactlyOnceWriter#flush}, after the records' and the emitted rows and
     * before the epoch-checked offset updates, so a fenced flush rolls it back with everything else. The states still
     * show what is being committed ({@link PartitionState#targetNext}, {@link PartitionState#emitted}).
     */
    void write(Connection c, List<PartitionState> dirty) throws SQLException;

    /**
     * The offsets were set by hand ({@link ExactlyOnceWriter#overwriteOffsets}; a null value: reset to no offset):
     * brings these partitions' rows in line, in the same transaction.
     */
    void overwrite(Connection c, Map<TopicPartition, Long> nextOffsets) throws SQLException;

    /**
     * Creates a table with {@code createStatement} unless {@code qualifiedName} (as {@link PostgresDialect#qualified}
     * gives it) already exists, as the writer does its offsets table: it looks first, so a user without CREATE
     * can use a table made for it, and serialises the creation between tasks with a transaction-scoped advisory lock.
     */
    static void createIfAbsent(Connection c, String qualifiedName, String createStatement) throws SQLException {
        OffsetStore.createIfAbsent(c, qualifiedName, createStatement);
    }
}
