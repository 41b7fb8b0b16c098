package io.asofconnect.writer;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.sink.SinkRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Writes records as rows of Postgres tables so that each record takes effect in the target once, however often
 * it is delivered and whichever task holds its partition. Its host (a Connect sink task) keeps the records of each
 * partition it was given in a {@link PartitionState}, and calls {@link #claim} when it is given partitions,
 * {@link #flush} to write what it holds, and {@link #reconcile} before it writes again after a failure.
 *
 * <p>The contract:
 * <ul>
 *   <li><b>Rows and consumed offsets in one transaction.</b> A flush writes the rows of the buffered records of every
 *       partition it covers and sets each partition's next offset in the offsets table ({@link OffsetStore}, layout in
 *       {@link PostgresDialect}) in one transaction: the target holds both or neither. A record that can never be
 *       written goes to the host's {@link BatchWriter.BadRecordHandler} and writes no row, but its offset advances.
 *       Rows a host {@link PartitionState#emit emitted} are written after the records, in the same transaction, and
 *       consume no offset (a bad one goes to the same handler); the host's {@link SideTables} are written after all
 *       rows, read when partitions are claimed or reconciled and follow {@link #overwriteOffsets}, always in the
 *       transaction of that call. The sink has neither ({@link SideTables#NONE}).</li>
 *   <li><b>The epoch is checked in that transaction.</b> {@link #claim} takes each partition over by raising its
 *       epoch in the offsets table. A flush moves a partition's offset only where the row still carries the epoch
 *       this writer claimed, as the last statements before the commit, so the row is locked only for a moment; if
 *       another epoch is there, the whole transaction rolls back.</li>
 *   <li><b>Rewind to the stored offsets on open.</b> {@link #claim} returns, per partition, the next offset the target
 *       holds ({@link OffsetStore#NO_OFFSET} before the first commit). The host rewinds its consumer there and drops
 *       records before it ({@link PartitionState#isNew}): the target, not the consumer group, decides where to
 *       continue.</li>
 *   <li><b>What a zombie sees.</b> A writer whose partition another task has claimed since (it was frozen past its
 *       session, or a rebalance found it unresponsive) commits nothing more: its next flush finds the other epoch,
 *       rolls back everything it wrote, and throws {@link FencedException}; so does {@link #reconcile}. The host must
 *       stop writing; the new owner continues from the offsets row.</li>
 * </ul>
 *
 * <p>An {@link SQLException} leaves nothing committed by the call that threw it, unless the commit itself was sent and
 * its answer lost with the connection: {@link #reconcile} learns which from the offsets rows. {@link SqlErrors#classify}
 * tells whether the host may retry. Partitions whose close has begun ({@link Revocations}) are never committed.
 *
 * <p>Owns the task's one connection; after any failure the connection is dropped and the next use opens a new one.
 * One thread at a time.
 */
public final class ExactlyOnceWriter implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ExactlyOnceWriter.class);

    private final ConnectionFactory connections;
    private final OffsetStore offsets;
    private final BatchWriter rows;
    private final TableCatalog catalog;
    private final WriterMetrics metrics;
    private final SideTables sideTables;
    private Connection connection;

    /**
     * A writer for these settings, without side tables; it connects on first use. {@code applicationName} is what
     * the target's {@code pg_stat_activity} shows for its connection.
     */
    public static ExactlyOnceWriter create(WriterSettings settings, String applicationName, WriterMetrics metrics) {
        return create(settings, applicationName, metrics, SideTables.NONE);
    }

    /** As {@link #create(WriterSettings, String, WriterMetrics)}, keeping the host's {@code sideTables} in its transactions. */
    public static ExactlyOnceWriter create(WriterSettings settings, String applicationName, WriterMetrics metrics, SideTables sideTables) {
        PostgresDialect dialect = new PostgresDialect(settings.tableSchema());
        TableCatalog catalog = settings.schemaEvolution() == SchemaEvolution.BASIC ? new TableCatalog(dialect) : null;
        RowMapper mapper = new RowMapper(settings.rows());
        ConnectionFactory connections = new ConnectionFactory(settings.connectionUrl(), settings.connectionUser(),
                settings.connectionPassword(), applicationName);
        OffsetStore offsets = new OffsetStore(dialect, settings.offsetsTableName(), settings.connectorName());
        return new ExactlyOnceWriter(connections, offsets, new BatchWriter(dialect, mapper, catalog), catalog, metrics, sideTables);
    }

    ExactlyOnceWriter(ConnectionFactory connections, OffsetStore offsets, BatchWriter rows, TableCatalog catalog, WriterMetrics metrics,
                      SideTables sideTables) {
        this.connections = connections;
        this.offsets = offsets;
        this.rows = rows;
        this.catalog = catalog;
        this.metrics = metrics;
        this.sideTables = Objects.requireNonNull(sideTables, "sideTables");
    }

    /**
     * Creates the offsets table (and the side tables) if needed, takes a new epoch for each partition and reads the
     * side tables' rows of these partitions, in one transaction in which the server cancels any statement running
     * longer than {@code timeoutMs} (SQLState 57014, transient): a claim waiting on a row lock cannot outlast the
     * caller's bound.
     */
    public Map<TopicPartition, OffsetStore.Claim> claim(Collection<TopicPartition> partitions, long timeoutMs) throws SQLException {
        Connection c = connection();
        try {
            try (PreparedStatement ps = c.prepareStatement(PostgresDialect.localStatementTimeout())) {
                ps.setString(1, Long.toString(timeoutMs));
                ps.execute();
            }
            offsets.ensureTable(c);
            sideTables.ensure(c);
            Map<TopicPartition, OffsetStore.Claim> claims = new LinkedHashMap<>();
            for (TopicPartition tp : partitions) {
                claims.put(tp, offsets.claim(c, tp));
            }
            sideTables.read(c, partitions);
            c.commit();
            return claims;
        } catch (SQLException | RuntimeException e) {
            abandon();
            throw e;
        }
    }

    /**
     * Writes the buffered records of these partitions, then the rows they emitted, then their side tables' rows,
     * and moves their offsets, in one transaction. A partition is flushed when it has something to commit
     * ({@link PartitionState#hasUncommitted}): one that only emitted rows or changed keeps its next offset, but its
     * epoch is checked all the same. The offsets rows are updated last, just before the commit, so their locks are
     * held only for a moment: a new owner claiming a partition in {@code open} does not wait behind a long (or frozen) flush, and the
     * flush, finding another epoch on the row, rolls everything back. Partitions whose close has begun are left
     * out; if one begins closing during the flush, it rolls back and returns false, writing nothing.
     */
    public boolean flush(Collection<PartitionState> states, BatchWriter.BadRecordHandler badRecords, Revocations revocations) throws SQLException {
        List<PartitionState> dirty = states.stream().filter(PartitionState::hasUncommitted)
                .filter(s -> !revocations.isRevoked(s.partition())).toList();
        if (dirty.isEmpty()) {
            return true;
        }
        List<SinkRecord> records = new ArrayList<>();
        dirty.forEach(s -> records.addAll(s.buffered()));
        dirty.forEach(s -> records.addAll(s.emitted()));
        long start = System.nanoTime();
        int[] skipped = {0};
        Connection c = connection();
        try {
            try {
                rows.writeFast(c, records);
            } catch (BatchWriter.BadRecordInBatch e) {
                log.debug("A record of the batch cannot be written; rewriting the batch row by row");
                c.rollback();
                forgetCatalog();
                rows.writeCareful(c, records, (r, reason) -> {
                    badRecords.onBadRecord(r, reason);
                    skipped[0]++;
                });
            }
            sideTables.write(c, dirty);
            advanceAll(c, dirty);
            if (!revocations.commitUnlessRevoked(c, dirty)) {
                c.rollback();
                log.debug("Rolled back a flush of {} records: a partition it writes began closing", records.size());
                return false;
            }
        } catch (SQLException | RuntimeException e) {
            abandon();
            throw e;
        }
        metrics.committed(records.size(), records.size() - skipped[0], System.nanoTime() - start);
        for (PartitionState s : dirty) {
            s.committed(s.targetNext());
        }
        log.debug("Committed {} records of {} partitions", records.size(), dirty.size());
        return true;
    }

    private void advanceAll(Connection c, List<PartitionState> dirty) throws SQLException {
        for (PartitionState s : dirty) {
            if (!offsets.advance(c, s.partition(), s.epoch(), s.targetNext())) {
                long current = offsets.read(c, s.partition()).map(OffsetStore.Claim::epoch).orElse(-1L);
                metrics.fenced();
                throw new FencedException(s.partition(), current, s.epoch());
            }
        }
    }

    /**
     * After a failure, learns from the offsets table what actually committed: a commit whose outcome was
     * lost with the connection shows as a next offset past ours (only our epoch can move it). Fenced if
     * another task took a partition over meanwhile. Then reads the side tables' rows of these partitions: a flush
     * that moved no offset (it only emitted rows or changed side tables) cannot be told committed from the offsets
     * row, so a host with side tables rebuilds from what they hold ({@link PartitionState#discardUncommitted}).
     */
    public void reconcile(Collection<PartitionState> states) throws SQLException {
        Connection c = connection();
        try {
            for (PartitionState s : states) {
                Optional<OffsetStore.Claim> claim = offsets.read(c, s.partition());
                if (claim.isEmpty() || claim.get().epoch() != s.epoch()) {
                    metrics.fenced();
                    throw new FencedException(s.partition(), claim.map(OffsetStore.Claim::epoch).orElse(-1L), s.epoch());
                }
                long next = claim.get().nextOffset();
                if (next > s.committedNext()) {
                    log.info("The last commit for {} did complete before the connection was lost; continuing after it", s.partition());
                    s.committed(next);
                } else if (next < s.committedNext()) {
                    throw new org.apache.kafka.connect.errors.ConnectException("the offsets row of " + s.partition() + " in "
                            + offsets.qualifiedName() + " went back below what this task committed; it was changed by hand."
                            + " Restart the connector to continue from the row's offset");
                }
            }
            sideTables.read(c, states.stream().map(PartitionState::partition).toList());
            c.commit();
        } catch (SQLException | RuntimeException e) {
            abandon();
            throw e;
        }
    }

    /**
     * Sets each partition's next offset ({@code null}: back to "no offset yet"), raising its epoch so that any task
     * holding it is fenced, and lets the side tables follow ({@link SideTables#overwrite}); creates the offsets table
     * and the side tables if needed. One transaction: all or nothing.
     */
    public void overwriteOffsets(Map<TopicPartition, Long> nextOffsets) throws SQLException {
        Connection c = connection();
        try {
            offsets.ensureTable(c);
            sideTables.ensure(c);
            for (Map.Entry<TopicPartition, Long> e : nextOffsets.entrySet()) {
                offsets.overwrite(c, e.getKey(), e.getValue());
            }
            sideTables.overwrite(c, nextOffsets);
            c.commit();
        } catch (SQLException | RuntimeException e) {
            abandon();
            throw e;
        }
    }

    /** The offsets table as the writer's statements name it: schema and table, quoted. */
    public String offsetsTable() {
        return offsets.qualifiedName();
    }

    private Connection connection() throws SQLException {
        if (connection == null) {
            connection = connections.open();
        }
        return connection;
    }

    private void forgetCatalog() {
        if (catalog != null) {
            catalog.forget();
        }
    }

    /** Rolls back and drops the connection: its state is unknown after a failure. */
    public void abandon() {
        forgetCatalog();
        Connection c = connection;
        connection = null;
        if (c == null) {
            return;
        }
        try {
            c.rollback();
        } catch (SQLException | RuntimeException ignored) {
            // The connection may already be gone; closing below is all that is left to do.
        }
        try {
            c.close();
        } catch (SQLException | RuntimeException ignored) {
            // As above.
        }
    }

    @Override
    public void close() {
        abandon();
    }
}
