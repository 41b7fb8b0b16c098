/**
 * The writer's options as every host defines them: {@link io.asofconnect.writer.config.WriterOptions} (the
 * {@code connection.*}, {@code table.schema}, {@code schema.evolution}, {@code batch.*}, {@code offsets.table.name}
 * and retry keys, and their parsed view) and the validators of those keys, so that the sink and the joins accept
 * and document them alike.
 */
package io.asofconnect.writer.config;
