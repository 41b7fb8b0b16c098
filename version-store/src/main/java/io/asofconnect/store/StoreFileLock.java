package io.asofconnect.store;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * An exclusive OS lock on {@code <store>.lock}, held while the store is open. Taken before the store
 * file is touched, so a file in use by another process (or another store instance in this JVM) is
 * reported as locked rather than mistaken for a damaged file and quarantined. The OS drops the lock
 * when its process dies, so a crash never leaves a stale lock behind.
 */
final class StoreFileLock implements AutoCloseable {
    private final FileChannel channel;
    private final FileLock lock;

    private StoreFileLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    static Path lockFileOf(Path store) {
        return store.resolveSibling(store.getFileName() + ".lock");
    }

    static StoreFileLock acquire(Path store) {
        Path lockFile = lockFileOf(store);
        FileChannel ch;
        try {
            ch = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the lock file " + lockFile.getFileName()
                    + " next to the version store; check that its directory exists and is writable", e);
        }
        try {
            FileLock l = ch.tryLock();
            if (l == null) {
                throw new StoreLockedException(store, null);
            }
            return new StoreFileLock(ch, l);
        } catch (OverlappingFileLockException e) {
            closeQuietly(ch);
            throw new StoreLockedException(store, e);
        } catch (StoreLockedException e) {
            closeQuietly(ch);
            throw e;
        } catch (IOException e) {
            closeQuietly(ch);
            throw new UncheckedIOException("cannot lock " + lockFile.getFileName() + "; check the file system supports locks", e);
        }
    }

    private static void closeQuietly(FileChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // Nothing held yet: closing is only tidying up.
        }
    }

    @Override
    public void close() {
        try {
            lock.release();
        } catch (IOException ignored) {
            // Closing the channel below releases it too.
        }
        closeQuietly(channel);
    }
}
