package io.asofconnect.store;

import java.nio.file.Path;

/**
 * The store file is held open by another store instance, in this JVM or in another process. The file is
 * left untouched: it is in use, not damaged.
 */
public class StoreLockedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public StoreLockedException(Path file, Throwable cause) {
        super("store file " + file.getFileName() + " is in use by another process (or by another replica in"
                + " this worker); two workers/replicas must not share replica.path: give each its own path,"
                + " or stop the other one first", cause);
    }
}
