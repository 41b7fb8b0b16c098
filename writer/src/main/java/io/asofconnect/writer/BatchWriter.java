package io.asofconnect.writer;

import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.sink.SinkRecord;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes records' rows inside the caller's transaction. The fast path sends consecutive rows of one shape
 * as one JDBC batch and gives up at the first record that cannot be written; the careful path writes row
 * by row, each under a savepoint, so a bad record can be set aside while the others stay in the transaction.
 */
public final class BatchWriter {

    /** Decides what happens to a record that can never be written; throws to stop the whole flush. */
    public interface BadRecordHandler {
        void onBadRecord(SinkRecord record, DataException reason);
    }

    /** The fast path met a record that cannot be written; the caller rolls back and takes the careful path. */
    static final class BadRecordInBatch extends Exception {
        BadRecordInBatch() {
            super("a record in the batch cannot be written", null, false, false);
        }
    }

    private final PostgresDialect dialect;
    private final RowMapper mapper;
    private final TableCatalog catalog;

    /** {@code catalog} is null when the sink must not change the schema. */
    BatchWriter(PostgresDialect dialect, RowMapper mapper, TableCatalog catalog) {
        this.dialect = dialect;
        this.mapper = mapper;
        this.catalog = catalog;
    }

    void writeFast(Connection c, List<SinkRecord> records) throws SQLException, BadRecordInBatch {
        try (Statements statements = new Statements(c)) {
            List<RowChange> run = new ArrayList<>();
            boolean tableExists = true;
            for (SinkRecord r : records) {
                RowChange change;
                try {
                    change = mapper.map(r);
                } catch (DataException e) {
                    throw new BadRecordInBatch();
                }
                if (change == null) {
                    continue;
                }
                if (!run.isEmpty() && !run.get(0).shape().equals(change.shape())) {
                    writeRun(statements, run);
                    run.clear();
                }
                if (run.isEmpty()) {
                    tableExists = catalog == null || catalog.ensure(c, change);
                }
                if (tableExists) {
                    run.add(change);
                }
            }
            writeRun(statements, run);
        }
    }

    /**
     * Consecutive changes of one shape as one JDBC batch (which the driver sends as multi-row statements).
     * An upsert batch keeps only the last change per key: one multi-row {@code INSERT ... ON CONFLICT} cannot
     * touch a row twice, and the last change is what the row ends up as anyway. Runs are written in record order
     * and a delete never shares a run with an upsert (their shapes differ), so a delete and a later upsert of one
     * key (a retract changelog's -U then +U) end as the upsert, and an upsert then a delete as no row.
     */
    private static void writeRun(Statements statements, List<RowChange> run) throws SQLException, BadRecordInBatch {
        if (run.isEmpty()) {
            return;
        }
        Collection<RowChange> changes = run;
        if (run.get(0).op() == RowChange.Op.UPSERT && run.size() > 1) {
            Map<List<Object>, RowChange> lastPerKey = new LinkedHashMap<>();
            for (RowChange ch : run) {
                lastPerKey.put(comparableKey(ch.keyValues()), ch);
            }
            changes = lastPerKey.values();
        }
        PreparedStatement ps = statements.get(run.get(0).shape());
        try {
            for (RowChange ch : changes) {
                bind(ps, ch);
                ps.addBatch();
            }
        } catch (DataException e) {
            ps.clearBatch();
            throw new BadRecordInBatch();
        }
        execute(ps);
    }

    /** Byte arrays compare by identity; as buffers they compare by content. */
    private static List<Object> comparableKey(List<Object> values) {
        List<Object> key = new ArrayList<>(values.size());
        for (Object v : values) {
            key.add(v instanceof byte[] b ? ByteBuffer.wrap(b) : v);
        }
        return key;
    }

    private static void execute(PreparedStatement ps) throws SQLException, BadRecordInBatch {
        try {
            ps.executeBatch();
        } catch (SQLException e) {
            if (SqlErrors.classify(e) == SqlErrors.Kind.RECORD) {
                throw new BadRecordInBatch();
            }
            throw e;
        }
    }

    void writeCareful(Connection c, List<SinkRecord> records, BadRecordHandler handler) throws SQLException {
        try (Statements statements = new Statements(c)) {
            for (SinkRecord r : records) {
                Savepoint sp = c.setSavepoint();
                String table = null;
                try {
                    table = mapper.tableFor(r.topic());
                    RowChange change = mapper.map(r);
                    if (change != null && (catalog == null || catalog.ensure(c, change))) {
                        PreparedStatement ps = statements.get(change.shape());
                        bind(ps, change);
                        ps.executeUpdate();
                    }
                    c.releaseSavepoint(sp);
                } catch (DataException e) {
                    rollbackTo(c, sp);
                    handler.onBadRecord(r, e);
                } catch (SQLException e) {
                    if (SqlErrors.classify(e) != SqlErrors.Kind.RECORD) {
                        throw e;
                    }
                    rollbackTo(c, sp);
                    handler.onBadRecord(r, new DataException("the row could not be written to table \"" + table + "\": " + SqlErrors.describe(e)));
                }
            }
        }
    }

    private void rollbackTo(Connection c, Savepoint sp) throws SQLException {
        c.rollback(sp);
        if (catalog != null) {
            catalog.forget();
        }
    }

    private static void bind(PreparedStatement ps, RowChange change) throws SQLException {
        int i = 1;
        for (int k = 0; k < change.keyColumns().size(); k++) {
            ValueBinder.bind(ps, i++, change.keyColumns().get(k).kind(), change.keyValues().get(k));
        }
        for (int k = 0; k < change.valueColumns().size(); k++) {
            ValueBinder.bind(ps, i++, change.valueColumns().get(k).kind(), change.values().get(k));
        }
    }

    /** The prepared statements of one flush, by shape; all closed with it. */
    private final class Statements implements AutoCloseable {
        private final Connection c;
        private final Map<RowChange.Shape, PreparedStatement> byShape = new HashMap<>();

        Statements(Connection c) {
            this.c = c;
        }

        PreparedStatement get(RowChange.Shape shape) throws SQLException {
            PreparedStatement ps = byShape.get(shape);
            if (ps == null) {
                ps = c.prepareStatement(dialect.statement(shape));
                byShape.put(shape, ps);
            }
            return ps;
        }

        @Override
        public void close() throws SQLException {
            SQLException first = null;
            for (PreparedStatement ps : byShape.values()) {
                try {
                    ps.close();
                } catch (SQLException e) {
                    first = first == null ? e : first;
                }
            }
            if (first != null) {
                throw first;
            }
        }
    }
}
