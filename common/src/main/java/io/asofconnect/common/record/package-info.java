/**
 * Reading what a join needs from a Connect record: its join key ({@link io.asofconnect.common.record.KeyExtractor})
 * and its event time ({@link io.asofconnect.common.record.EventTimes}), through dotted
 * {@link io.asofconnect.common.record.FieldPath}s. Shared by the as-of enrichment and the window join, so that both
 * read keys and times alike; option names are passed in, so messages name the option the user set.
 */
package io.asofconnect.common.record;
