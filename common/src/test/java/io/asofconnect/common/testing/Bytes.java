package io.asofconnect.common.testing;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * Byte search and byte flips for the tests that damage a store's files on purpose (version-store and replica):
 * they find their own rows' bytes in a file and change one byte there.
 */
public final class Bytes {
    private Bytes() {
    }

    /** Where {@code needle} first occurs in {@code hay} at or after {@code from}, or -1. */
    public static int indexOf(byte[] hay, byte[] needle, int from) {
        outer:
        for (int i = from; i <= hay.length - needle.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /**
     * Where {@code text} (in UTF-8) first occurs in {@code hay}; a test whose damage would otherwise land somewhere
     * arbitrary fails here, naming {@code where} it looked.
     */
    public static int find(byte[] hay, String text, String where) {
        int at = indexOf(hay, text.getBytes(StandardCharsets.UTF_8), 0);
        if (at < 0) {
            throw new AssertionError("\"" + text + "\" is not in " + where);
        }
        return at;
    }

    /** Inverts every bit of the byte at {@code pos} of {@code file}. */
    public static void flip(Path file, long pos) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(pos);
            int b = raf.read();
            raf.seek(pos);
            raf.write(b ^ 0xFF);
        }
    }
}
