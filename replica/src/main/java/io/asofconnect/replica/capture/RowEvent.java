package io.asofconnect.replica.capture;

import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * One row change (ops c, u, d, r) read out of its envelope once, so that the batch consumer and the mapper
 * do not look fields up by name again.
 *
 * @param lsn       the change's {@code source.lsn}, or null
 * @param readAtMs  the source's {@code ts_ms} (commit time of a change, read time of a snapshot row), or null
 * @param update    op {@code u}: the only change that can leave columns out (unchanged TOASTed values)
 */
record RowEvent(SourceRecord record, Struct source, Struct after, String table, Long lsn, Long readAtMs, boolean snapshot, boolean update) {
}
