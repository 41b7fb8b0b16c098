package io.asofconnect.store;

import io.asofconnect.common.lookup.IndexDeclaration;

import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * How {@link MapDbVersionStore} opens its file.
 *
 * @param memoryMapped      no longer used by format 3 (the store reads its checkpoint once, on open, and
 *                          serves every read from memory); kept so that callers need not change
 * @param verification      kept for callers; format 3 verifies everything it loads under either value
 * @param schemaCacheSize   how many decoded row schemas are kept in memory (at least 1)
 * @param owner             how the store's problem lines name whoever uses it (the replica and its tasks), since
 *                          the store writes on their threads but knows nothing of them
 * @param indexes           the secondary indexes the store keeps ({@link io.asofconnect.common.lookup.ChangeFeed#indexed});
 *                          empty for enrichment users
 * @param feedTables        the tables ({@code schema.table}) whose versions are in the change feed
 *                          ({@link io.asofconnect.common.lookup.ChangeFeed#changesAfter}); empty for enrichment users
 */
public record StoreOptions(boolean memoryMapped, Verification verification, int schemaCacheSize, Supplier<String> owner,
                           List<IndexDeclaration> indexes, Set<String> feedTables) {

    /**
     * How much of an existing store is checked when it is opened. Since format 3 loads the whole store
     * into memory on open, every checkpoint entry and journal record is checked under both values.
     */
    public enum Verification {
        /** Everything loaded is checked (formerly: metadata, schemas and a sample of versions). */
        SAMPLE,
        /** Everything loaded is checked. */
        FULL
    }

    public StoreOptions {
        if (verification == null) {
            throw new IllegalArgumentException("verification must be SAMPLE or FULL, not null");
        }
        if (owner == null) {
            throw new IllegalArgumentException("owner must name who uses the store, not be null");
        }
        if (schemaCacheSize < 1) {
            throw new IllegalArgumentException("schemaCacheSize must be at least 1, was " + schemaCacheSize);
        }
        indexes = indexes == null ? List.of() : List.copyOf(indexes);
        feedTables = feedTables == null ? Set.of() : Set.copyOf(feedTables);
    }

    /** Options without indexes or a feed, as every caller before the change feed gave them. */
    public StoreOptions(boolean memoryMapped, Verification verification, int schemaCacheSize, Supplier<String> owner) {
        this(memoryMapped, verification, schemaCacheSize, owner, List.of(), Set.of());
    }

    public static StoreOptions defaults() {
        return new StoreOptions(true, Verification.SAMPLE, 1024, () -> "Version store");
    }

    public StoreOptions withVerification(Verification v) {
        return new StoreOptions(memoryMapped, v, schemaCacheSize, owner, indexes, feedTables);
    }

    public StoreOptions withOwner(Supplier<String> o) {
        return new StoreOptions(memoryMapped, verification, schemaCacheSize, o, indexes, feedTables);
    }

    /** These options with the secondary indexes {@code declarations} (replacing any given before). */
    public StoreOptions withIndexes(List<IndexDeclaration> declarations) {
        return new StoreOptions(memoryMapped, verification, schemaCacheSize, owner, declarations, feedTables);
    }

    /** These options with {@code tables} ({@code schema.table}) in the change feed (replacing any given before). */
    public StoreOptions withFeedTables(Set<String> tables) {
        return new StoreOptions(memoryMapped, verification, schemaCacheSize, owner, indexes, tables);
    }

    /** Whether the store keeps a feed or an index, and so derives anything from the versions put. */
    boolean derivesAnything() {
        return !indexes.isEmpty() || !feedTables.isEmpty();
    }
}
