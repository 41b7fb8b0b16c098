package io.asofconnect.store;

/**
 * How {@link MapDbVersionStore} opens its file.
 *
 * @param memoryMapped      use memory-mapped I/O where the platform supports it (faster reads; the file
 *                          is still written through MapDB's write-ahead log)
 * @param verification      how much of an existing file is checked on open
 * @param schemaCacheSize   how many decoded row schemas are kept in memory (at least 1)
 */
public record StoreOptions(boolean memoryMapped, Verification verification, int schemaCacheSize) {

    /** How much of an existing store file is read back and checked when it is opened. */
    public enum Verification {
        /**
         * Format version, the checksum over metadata and offsets, every schema, and the first and last
         * {@value MapDbVersionStore#VERIFY_SAMPLE} versions. Cheap: independent of the file's size.
         */
        SAMPLE,
        /** As {@link #SAMPLE}, but every version is read and checked: time proportional to the file. */
        FULL
    }

    public StoreOptions {
        if (verification == null) {
            throw new IllegalArgumentException("verification must be SAMPLE or FULL, not null");
        }
        if (schemaCacheSize < 1) {
            throw new IllegalArgumentException("schemaCacheSize must be at least 1, was " + schemaCacheSize);
        }
    }

    public static StoreOptions defaults() {
        return new StoreOptions(true, Verification.SAMPLE, 1024);
    }

    public StoreOptions withVerification(Verification v) {
        return new StoreOptions(memoryMapped, v, schemaCacheSize);
    }
}
