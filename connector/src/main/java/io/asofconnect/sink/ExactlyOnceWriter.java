package io.asofconnect.sink;

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
import java.util.Optional;

/**
 * Commits rows and the offsets that follow them in one transaction, and only under the epochs this task
 * holds. Owns the task's one connection; after any failure the connection is dropped and the next use
 * opens a new one.
 */
final class ExactlyOnceWriter implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ExactlyOnceWriter.class);

    private final ConnectionFactory connections;
    private final OffsetStore offsets;
    private final BatchWriter rows;
    private final TableCatalog catalog;
    private final SinkMetrics metrics;
    private Connection connection;

    ExactlyOnceWriter(ConnectionFactory connections, OffsetStore offsets, BatchWriter rows, TableCatalog catalog, SinkMetrics metrics) {
        this.connections = connections;
        this.offsets = offsets;
        this.rows = rows;
        this.catalog = catalog;
        this.metrics = metrics;
    }

    /**
     * Creates the offsets table if needed and takes a new epoch for each partition, in one transaction in which
     * the server cancels any statement running longer than {@code timeoutMs} (SQLState 57014, transient): a
     * claim waiting on a row lock cannot outlast the caller's bound.
     */
    Map<TopicPartition, OffsetStore.Claim> claim(Collection<TopicPartition> partitions, long timeoutMs) throws SQLException {
        Connection c = connection();
        try {
            try (PreparedStatement ps = c.prepareStatement(PostgresDialect.localStatementTimeout())) {
                ps.setString(1, Long.toString(timeoutMs));
                ps.execute();
            }
            offsets.ensureTable(c);
            Map<TopicPartition, OffsetStore.Claim> claims = new LinkedHashMap<>();
            for (TopicPartition tp : partitions) {
                claims.put(tp, offsets.claim(c, tp));
            }
            c.commit();
            return claims;
        } catch (SQLException | RuntimeException e) {
            abandon();
            throw e;
        }
    }

    /**
     * Writes the buffered records of these partitions and moves their offsets, in one transaction. The
     * offsets rows are updated last, just before the commit, so their locks are held only for a moment: a new
     * owner claiming a partition in {@code open} does not wait behind a long (or frozen) flush, and the
     * flush, finding another epoch on the row, rolls everything back. Partitions whose close has begun are left
     * out; if one begins closing during the flush, it rolls back and returns false, writing nothing.
     */
    boolean flush(Collection<PartitionState> states, BatchWriter.BadRecordHandler badRecords, Revocations revocations) throws SQLException {
        List<PartitionState> dirty = states.stream().filter(PartitionState::hasUncommitted)
                .filter(s -> !revocations.isRevoked(s.partition())).toList();
        if (dirty.isEmpty()) {
            return true;
        }
        List<SinkRecord> records = new ArrayList<>();
        dirty.forEach(s -> records.addAll(s.buffered()));
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
     * another task took a partition over meanwhile.
     */
    void reconcile(Collection<PartitionState> states) throws SQLException {
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
            c.commit();
        } catch (SQLException | RuntimeException e) {
            abandon();
            throw e;
        }
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
    void abandon() {
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
