package io.asofconnect.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * The store's entry point, at the path its callers know: {@code magic(8) format(4) generation(8)
 * crc32c(4)}. It names the newest complete checkpoint and its journal by their generation, and is only
 * ever replaced whole, atomically (written to a temp file, forced, renamed, directory forced), so a
 * crash leaves either the old or the new one.
 */
final class Manifest {
    static final byte[] MAGIC = "ASOFSTOR".getBytes(StandardCharsets.US_ASCII);
    private static final int SIZE = 24;

    private Manifest() {
    }

    /** The generation the manifest names; a StoreCorruptedException for anything but a valid manifest of this format. */
    static long read(Path file, int format) throws IOException {
        byte[] b = Files.readAllBytes(file);
        if (b.length != SIZE || !java.util.Arrays.equals(b, 0, 8, MAGIC, 0, 8)) {
            throw new StoreCorruptedException(file, "the store file is not a version store manifest (a format 2 MapDB file,"
                    + " whose layout this build no longer reads, or a foreign file)");
        }
        ByteBuffer in = ByteBuffer.wrap(b);
        if (crc(b) != in.getInt(20)) {
            throw new StoreCorruptedException(file, "the manifest fails its checksum");
        }
        int found = in.getInt(8);
        if (found != format) {
            throw new StoreCorruptedException(file, "format version " + found + ", this build reads " + format);
        }
        long generation = in.getLong(12);
        if (generation <= 0) {
            throw new StoreCorruptedException(file, "the manifest names generation " + generation);
        }
        return generation;
    }

    static void write(StoreFiles files, int format, long generation) throws IOException {
        ByteBuffer out = ByteBuffer.allocate(SIZE);
        out.put(MAGIC).putInt(format).putLong(generation);
        out.putInt(20, crc(out.array()));
        Files.write(files.manifestTemp(), out.array());
        StoreFiles.commitRename(files.manifestTemp(), files.manifest());
    }

    private static int crc(byte[] b) {
        CRC32C c = new CRC32C();
        c.update(b, 0, 20);
        return (int) c.getValue();
    }
}
