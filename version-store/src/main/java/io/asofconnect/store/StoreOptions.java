package io.asofconnect.store;

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
 */
public record StoreOptions(boolean memoryMapped, Verification verification, int schemaCacheSize, Supplier<String> owner) {

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
    }

    public static StoreOptions defaults() {
        return new StoreOptions(true, Verification.SAMPLE, 1024, () -> "Version store");
    }

    public StoreOptions withVerification(Verification v) {
        return new StoreOptions(memoryMapped, v, schemaCacheSize, owner);
    }

    public StoreOptions withOwner(Supplier<String> o) {
        return new StoreOptions(memoryMapped, verification, schemaCacheSize, o);
    }
}
