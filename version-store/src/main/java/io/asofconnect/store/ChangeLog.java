package io.asofconnect.store;

import io.asofconnect.common.data.ByteSink;
import io.asofconnect.common.data.ByteSource;
import io.asofconnect.common.data.MalformedEncodingException;

import java.nio.file.Path;

/**
 * The writes since the last commit, in the order they were made, as the payload of one journal record
 * ({@link Journal}); and the replay of such a payload into a {@link MemoryStore}. Operations:
 * {@code TABLE id name}, {@code SCHEMA id bytes}, {@code PUT table rowKey validFrom lsn ordinal body},
 * {@code OFFSET key value}, {@code META key value-or-null}, {@code WATERMARK w},
 * {@code HISTORY_START h}, {@code PRUNE horizon}; each one opcode byte, then its fields.
 */
final class ChangeLog {
    private static final int TABLE = 1;
    private static final int SCHEMA = 2;
    private static final int PUT = 3;
    private static final int OFFSET = 4;
    private static final int META = 5;
    private static final int WATERMARK = 6;
    private static final int HISTORY_START = 7;
    private static final int PRUNE = 8;

    private ByteSink out = new ByteSink(4096);
    private int ops;

    void table(int id, String name) {
        out.write(TABLE).writeInt(id).writeString(name);
        ops++;
    }

    void schema(long id, byte[] bytes) {
        out.write(SCHEMA).writeLong(id).writeBytesWithLength(bytes);
        ops++;
    }

    void put(int table, byte[] rowKey, long validFrom, long lsn, int ordinal, byte[] body) {
        out.write(PUT).writeInt(table).writeBytesWithLength(rowKey).writeLong(validFrom).writeLong(lsn).writeInt(ordinal)
                .writeBytesWithLength(body);
        ops++;
    }

    void offset(byte[] key, byte[] value) {
        out.write(OFFSET).writeBytesWithLength(key).writeBytesWithLength(value);
        ops++;
    }

    void meta(String key, String value) {
        out.write(META).writeString(key).writeNullableString(value);
        ops++;
    }

    void watermark(long w) {
        out.write(WATERMARK).writeLong(w);
        ops++;
    }

    void historyStart(long h) {
        out.write(HISTORY_START).writeLong(h);
        ops++;
    }

    void prune(long horizon) {
        out.write(PRUNE).writeLong(horizon);
        ops++;
    }

    boolean isEmpty() {
        return ops == 0;
    }

    /** Appends everything logged since the last clear to {@code journal} as one record. */
    void appendTo(Journal journal) {
        journal.append(out.array(), out.size());
    }

    void clear() {
        // A bulk load can grow the buffer to hundreds of MB: do not keep it for the next, small, commit.
        out = new ByteSink(4096);
        ops = 0;
    }

    /** Applies a committed record's payload to {@code store} and commits it there. */
    static void replay(Path file, byte[] payload, MemoryStore store) {
        ByteSource in = new ByteSource(payload, 0);
        try {
            while (!in.atEnd()) {
                int op = in.read();
                switch (op) {
                    case TABLE -> store.tables.restore(in.readInt(), in.readString());
                    case SCHEMA -> store.schemas.restore(in.readLong(), in.readBytesWithLength());
                    case PUT -> {
                        int table = in.readInt();
                        byte[] rowKey = in.readBytesWithLength();
                        long validFrom = in.readLong();
                        long lsn = in.readLong();
                        int ordinal = in.readInt();
                        store.put(table, rowKey, validFrom, lsn, ordinal, in.readBytesWithLength());
                    }
                    case OFFSET -> store.meta.putOffset(in.readBytesWithLength(), in.readBytesWithLength());
                    case META -> store.meta.setMeta(in.readString(), in.readNullableString());
                    case WATERMARK -> store.meta.setWatermark(in.readLong());
                    case HISTORY_START -> store.meta.setHistoryStart(in.readLong());
                    case PRUNE -> store.prune(in.readLong());
                    default -> throw new MalformedEncodingException("unknown journal operation " + op);
                }
            }
        } catch (MalformedEncodingException e) {
            throw new StoreCorruptedException(file, "a journal record passes its checksum but does not decode", e);
        }
        store.onCommit();
    }
}
