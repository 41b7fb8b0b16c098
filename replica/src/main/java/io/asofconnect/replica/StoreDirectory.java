package io.asofconnect.replica;

import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.Quarantine;
import io.asofconnect.store.StoreLockedException;
import io.asofconnect.store.StoreOptions;
import io.asofconnect.store.VersionStore;
import org.apache.kafka.connect.errors.ConnectException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Supplier;

/** The replica's store file: opening it in its directory, and moving a damaged or outdated one aside. */
final class StoreDirectory {
    private final ReplicaConfig config;
    private final Supplier<String> who;

    /** @param who how the store's problem lines name the replica and the tasks using it */
    StoreDirectory(ReplicaConfig config, Supplier<String> who) {
        this.config = config;
        this.who = who;
    }

    /**
     * Opens (creating if need be) the store file, keeping the indexes and feed the config declares; a file another
     * process holds fails with the option to check. The one place the replica opens a store, first and after a
     * rebuild alike.
     */
    VersionStore open() {
        try {
            Files.createDirectories(config.directory());
        } catch (IOException e) {
            throw new ConnectException("replica '" + config.name() + "': cannot create the store directory given by "
                    + ReplicaConfig.PATH + ": " + e.getMessage(), e);
        }
        try {
            return MapDbVersionStore.open(config.storeFile(), StoreOptions.defaults().withOwner(who)
                    .withIndexes(config.indexes()).withFeedTables(config.feedTables()));
        } catch (StoreLockedException e) {
            throw new ConnectException("replica '" + config.name() + "': " + e.getMessage() + " (" + ReplicaConfig.PATH + ")", e);
        }
    }

    /** Moves the (closed) store file aside; returns where it went. */
    Path quarantine() {
        return Quarantine.moveAside(config.storeFile());
    }
}
