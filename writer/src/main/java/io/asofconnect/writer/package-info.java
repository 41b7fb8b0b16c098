/**
 * The exactly-once JDBC writer: records become rows of Postgres tables, written in one transaction with the Kafka
 * offsets they consume, under an epoch that fences a task which lost its partitions. {@link
 * io.asofconnect.writer.ExactlyOnceWriter} states the contract: rows and consumed offsets commit together; the
 * epoch is checked in that transaction; on open the host rewinds to the offsets stored in the target; a zombie
 * (fenced) task commits nothing and gets {@link io.asofconnect.writer.FencedException}. A host may also write rows
 * that consume no offset ({@link io.asofconnect.writer.PartitionState#emit}) and keep tables of its own in the same
 * transactions ({@link io.asofconnect.writer.SideTables}); the window join does, the sink does not.
 *
 * <p>Its pieces: {@link io.asofconnect.writer.PartitionState} (per partition: epoch, committed offset, records to
 * write), {@code BatchWriter} (JDBC batches, row by row under savepoints when a record is bad), {@code RowMapper}
 * (record to row change, by {@link io.asofconnect.writer.RowMappingRules}), {@link io.asofconnect.writer.PostgresDialect}
 * (every statement, the offsets table's layout), {@link io.asofconnect.writer.OffsetStore} (offsets and epochs),
 * {@link io.asofconnect.writer.SideTables} (a host's tables, in the writer's transactions),
 * {@code TableCatalog} (schema evolution), {@link io.asofconnect.writer.SqlErrors} (what a failure asks for).
 * Its hosts build {@link io.asofconnect.writer.WriterSettings} from their own configuration, define the shared
 * options with {@link io.asofconnect.writer.config.WriterOptions}, and retry through
 * {@link io.asofconnect.writer.WriterRetries}; nothing here depends on a host.
 */
package io.asofconnect.writer;
