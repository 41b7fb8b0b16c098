package io.asofconnect.store;

import io.asofconnect.common.lookup.ChangeFeed;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The durable, local history of the replicated tables: per (table, key) an ordered list of versions,
 * plus the change-capture engine's source offsets and the watermark, all committed together.
 *
 * <p>Writes ({@link #put}, {@link #putOffset}, {@link #setWatermark}, {@link #setMeta},
 * {@link #prune}) are buffered until {@link #commit()}, which makes all of them durable at once or none
 * of them: after a crash the store reopens at the last commit. There is one writer (the capture
 * thread); reads may come from any thread at any time and see the writer's uncommitted puts, which is
 * harmless because a replay re-applies the same changes at the same positions.
 *
 * <p>Versions are ordered by (valid-from, source position). Putting a version whose (valid-from,
 * position) the key already has replaces it: replays from the engine are absorbed, never doubled.
 *
 * <p>As a {@link ChangeFeed}, the store answers for the feed tables and indexes its options declare
 * ({@link StoreOptions#feedTables()}, {@link StoreOptions#indexes()}): the feed holds every retained version of a
 * feed table valid from the highest horizon pruned on, and the feed and indexes show committed writes only.
 * {@link ChangeFeed#before} reads the rows, as {@link #floor} does. Without declarations the feed is empty and
 * every index probe is an error.
 */
public interface VersionStore extends ChangeFeed, AutoCloseable {

    /** Adds or replaces the version of {@code key} at {@code version.validFrom()} and {@code version.position()}. */
    void put(String table, RowKey key, Version version);

    /** The version with the greatest (valid-from, position) whose valid-from is at or before {@code timestamp}. */
    Optional<Version> floor(String table, RowKey key, long timestamp);

    /** The version with the greatest (valid-from, position). */
    Optional<Version> latest(String table, RowKey key);

    /** The version with exactly this id. */
    Optional<Version> find(String table, RowKey key, VersionId id);

    /** Every retained version of the key, oldest first. */
    List<Version> history(String table, RowKey key);

    /** Every key of {@code table} that has at least one version, in key order. */
    Iterable<RowKey> keys(String table);

    /** Records one of the engine's source offsets (the engine's own serialized key and value). */
    void putOffset(ByteBuffer key, ByteBuffer value);

    /** The offsets as of the last commit, plus any put since. */
    Map<ByteBuffer, ByteBuffer> offsets();

    void setWatermark(long watermark);

    /** The watermark as of the last commit, or {@link Long#MIN_VALUE}. */
    long watermark();

    /** Small string metadata kept with the data (slot identity, server system id, history start...). */
    void setMeta(String key, String value);

    Optional<String> meta(String key);

    /**
     * Removes, for every key, the versions whose valid-from is before {@code horizon} except the newest
     * of them, so that lookups at or after the horizon keep their answer. A key whose only remaining
     * version before the horizon is a tombstone loses it too. Raises {@link #historyStart()} to the
     * horizon.
     *
     * @return how many versions were removed
     */
    long prune(long horizon);

    /** Lookups before this instant cannot be answered. */
    @Override
    long historyStart();

    void setHistoryStart(long historyStart);

    /** Makes every write since the last commit durable, atomically. */
    void commit();

    /** Discards every write since the last commit. */
    void rollback();

    /** How the store came to be open: fresh, reopened, or rebuilt after a failed open or verification. */
    OpenOutcome openOutcome();

    /** How much the store holds: for metrics, read from any thread, not exact while the writer runs. */
    default Footprint footprint() {
        return Footprint.UNKNOWN;
    }

    /** Versions and keys held, and bytes of the store's files on disk; -1 where unknown. */
    record Footprint(long versions, long keys, long diskBytes) {
        public static final Footprint UNKNOWN = new Footprint(-1, -1, -1);
    }

    @Override
    void close();
}
