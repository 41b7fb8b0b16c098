package io.asofconnect.store;

import java.nio.file.Path;

/**
 * The store file holds bytes that fail their checksum or cannot be decoded. Thrown instead of ever
 * answering with a wrong row. The file must be rebuilt: stop the replica, and on the next start it
 * quarantines the file (or delete it by hand) and takes a new snapshot.
 */
public class StoreCorruptedException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String what;

    public StoreCorruptedException(Path file, String what, Throwable cause) {
        super(message(file, what), cause);
        this.what = what;
    }

    public StoreCorruptedException(Path file, String what) {
        super(message(file, what));
        this.what = what;
    }

    /** What was found damaged, without the advice. */
    public String what() {
        return what;
    }

    private static String message(Path file, String what) {
        return "version store " + file.getFileName() + " is corrupted: " + what
                + "; restart the replica so that it quarantines the file and takes a new snapshot"
                + " (or delete the file and its siblings of the same name while the replica is stopped)";
    }
}
