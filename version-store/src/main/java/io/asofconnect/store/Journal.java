package io.asofconnect.store;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.function.Consumer;
import java.util.zip.CRC32C;

/**
 * The append-only journal of one checkpoint generation: a header {@code magic(8) format(4)
 * generation(8) crc32c(4)}, then one record per commit, {@code length(4) crc32c(4) sequence(8)
 * payload}, the checksum over length, sequence and payload, sequences 1, 2, 3... A commit is one
 * append and one {@code force(false)}: its cost is the size of the batch, never of the store.
 *
 * <p>Replay: a record cut short or failing its checksum with nothing valid after it is the tail a
 * crash tore during its append; that commit never returned, so it is dropped and the file truncated
 * there. A failing record followed by a valid one, or a sequence out of order, is damage.
 */
final class Journal implements AutoCloseable {
    static final byte[] MAGIC = "ASOFJRNL".getBytes(StandardCharsets.US_ASCII);
    static final int HEADER = 24;
    static final int RECORD_HEADER = 16;
    /** How far past the expected sequence a record found behind a damaged one may be and still count as valid data. */
    private static final long SEQUENCE_WINDOW = 1L << 32;

    private final Path file;
    private final FileChannel channel;
    private long size;
    private long nextSequence;
    private boolean broken;

    private Journal(Path file, FileChannel channel, long size, long nextSequence) {
        this.file = file;
        this.channel = channel;
        this.size = size;
        this.nextSequence = nextSequence;
    }

    /** Creates an empty journal (header only, forced). The directory entry is forced by the manifest switch that names it. */
    static Journal create(Path file, int format, long generation) throws IOException {
        FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE);
        try {
            ByteBuffer h = ByteBuffer.allocate(HEADER);
            h.put(MAGIC).putInt(format).putLong(generation);
            CRC32C c = new CRC32C();
            c.update(h.array(), 0, 20);
            h.putInt(20, (int) c.getValue());
            writeFully(ch, h.rewind(), 0);
            ch.force(true);
            return new Journal(file, ch, HEADER, 1);
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /** Opens the journal, hands every committed payload to {@code apply} in order, and drops a torn tail. */
    static Journal replay(Path file, int format, long generation, Consumer<byte[]> apply) throws IOException {
        FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
        try {
            long fileSize = ch.size();
            checkHeader(file, ch, fileSize, format, generation);
            long pos = HEADER;
            long seq = 1;
            while (pos < fileSize) {
                byte[] payload = readRecord(file, ch, pos, fileSize, seq);
                if (payload == null) {
                    if (validRecordAfter(ch, pos, fileSize, seq)) {
                        throw new StoreCorruptedException(file, "journal record " + seq + " fails its checksum and valid records follow it");
                    }
                    ch.truncate(pos);
                    ch.force(true);
                    break;
                }
                apply.accept(payload);
                pos += RECORD_HEADER + payload.length;
                seq++;
            }
            return new Journal(file, ch, pos, seq);
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    private static void checkHeader(Path file, FileChannel ch, long fileSize, int format, long generation) throws IOException {
        if (fileSize < HEADER) {
            throw new StoreCorruptedException(file, "the journal " + file.getFileName() + " has no complete header");
        }
        ByteBuffer h = ByteBuffer.allocate(HEADER);
        readFully(ch, h, 0);
        byte[] b = h.array();
        CRC32C c = new CRC32C();
        c.update(b, 0, 20);
        if (!java.util.Arrays.equals(b, 0, 8, MAGIC, 0, 8) || h.getInt(20) != (int) c.getValue()) {
            throw new StoreCorruptedException(file, "the journal " + file.getFileName() + " has a damaged header");
        }
        if (h.getInt(8) != format || h.getLong(12) != generation) {
            throw new StoreCorruptedException(file, "the journal " + file.getFileName() + " belongs to format " + h.getInt(8)
                    + " generation " + h.getLong(12) + ", not the manifest's " + generation);
        }
    }

    /**
     * The payload of the record at {@code pos} if it is complete, passes its checksum and carries
     * {@code seq}; null if it is cut short or fails its checksum. A valid record with another
     * sequence is damage.
     */
    private static byte[] readRecord(Path file, FileChannel ch, long pos, long fileSize, long seq) throws IOException {
        if (fileSize - pos < RECORD_HEADER) {
            return null;
        }
        ByteBuffer h = ByteBuffer.allocate(RECORD_HEADER);
        readFully(ch, h, pos);
        int length = h.getInt(0);
        if (length < 0 || length > fileSize - pos - RECORD_HEADER) {
            return null;
        }
        byte[] payload = new byte[length];
        readFully(ch, ByteBuffer.wrap(payload), pos + RECORD_HEADER);
        if (checksum(length, h.getLong(8), payload) != h.getInt(4)) {
            return null;
        }
        if (h.getLong(8) != seq) {
            throw new StoreCorruptedException(file, "journal record at " + pos + " carries sequence " + h.getLong(8) + ", expected " + seq);
        }
        return payload;
    }

    /** Whether any offset after {@code pos} starts a complete record with a valid checksum and a later sequence. */
    private static boolean validRecordAfter(FileChannel ch, long pos, long fileSize, long seq) throws IOException {
        long rest = fileSize - pos;
        if (rest > Integer.MAX_VALUE - 64) {
            return true;
        }
        byte[] tail = new byte[(int) rest];
        readFully(ch, ByteBuffer.wrap(tail), pos);
        ByteBuffer b = ByteBuffer.wrap(tail);
        for (int q = 1; q + RECORD_HEADER <= tail.length; q++) {
            int length = b.getInt(q);
            long s = b.getLong(q + 8);
            if (length < 0 || length > tail.length - q - RECORD_HEADER || s < seq || s > seq + SEQUENCE_WINDOW) {
                continue;
            }
            CRC32C c = new CRC32C();
            update(c, length, s);
            c.update(tail, q + RECORD_HEADER, length);
            if ((int) c.getValue() == b.getInt(q + 4)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Appends one commit record, {@code payload[0, length)}, and forces it to disk; the commit is
     * durable when this returns. The payload is written from the caller's buffer, not copied: a bulk
     * commit can be hundreds of MB.
     */
    void append(byte[] payload, int length) {
        if (broken) {
            throw new IllegalStateException("an earlier append to the journal " + file.getFileName() + " failed; reopen the store");
        }
        CRC32C c = new CRC32C();
        update(c, length, nextSequence);
        c.update(payload, 0, length);
        ByteBuffer head = ByteBuffer.allocate(RECORD_HEADER);
        head.putInt(length).putInt((int) c.getValue()).putLong(nextSequence).flip();
        try {
            writeFully(channel, head, size);
            writeFully(channel, ByteBuffer.wrap(payload, 0, length), size + RECORD_HEADER);
            channel.force(false);
        } catch (IOException e) {
            undoAppend();
            throw new UncheckedIOException("cannot append a commit to the journal " + file.getFileName(), e);
        }
        size += RECORD_HEADER + length;
        nextSequence++;
    }

    /** Cuts a failed append back off, so that no later record follows a partial one; if even that fails, refuses further appends. */
    private void undoAppend() {
        try {
            channel.truncate(size);
            channel.force(true);
        } catch (IOException e) {
            broken = true;
        }
    }

    long size() {
        return size;
    }

    /** Whether any commit was appended to this generation. */
    boolean hasRecords() {
        return nextSequence > 1;
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException ignored) {
            // Every append was forced when it returned; closing loses nothing.
        }
    }

    private static int checksum(int length, long seq, byte[] payload) {
        CRC32C c = new CRC32C();
        update(c, length, seq);
        c.update(payload, 0, payload.length);
        return (int) c.getValue();
    }

    private static void update(CRC32C c, int length, long seq) {
        ByteBuffer b = ByteBuffer.allocate(12).putInt(length).putLong(seq);
        c.update(b.array(), 0, 12);
    }

    private static void writeFully(FileChannel ch, ByteBuffer b, long pos) throws IOException {
        while (b.hasRemaining()) {
            pos += ch.write(b, pos);
        }
    }

    private static void readFully(FileChannel ch, ByteBuffer b, long pos) throws IOException {
        while (b.hasRemaining()) {
            int n = ch.read(b, pos);
            if (n < 0) {
                throw new java.io.EOFException("journal ends early");
            }
            pos += n;
        }
    }
}
