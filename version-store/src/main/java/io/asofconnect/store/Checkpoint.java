package io.asofconnect.store;

import io.asofconnect.common.data.ByteSink;
import io.asofconnect.common.data.ByteSource;
import io.asofconnect.common.data.MalformedEncodingException;

import org.mapdb.Serializer;
import org.mapdb.SortedTableMap;
import org.mapdb.volume.MappedFileVol;
import org.mapdb.volume.Volume;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * A checkpoint: the whole committed store in one immutable MapDB {@link SortedTableMap} file, written
 * sequentially through its sink in key order and only ever read back whole, on open.
 *
 * <p>Entries: first each table's row count (key {@code 00000000 00000000}, so the load sizes its maps
 * once); then each row's packed history (a {@link PackedRow} without its key, which the entry's key
 * carries) in chunks of at most {@value #CHUNK} bytes (a MapDB node
 * must fit one page), key {@code tableId(4) rowKey chunk(4)}; then the store's state (format,
 * generation, tables, schemas, meta, offsets, watermark, history start, how many row entries precede
 * it and a CRC32C over their checksums) in chunks under keys {@code FFFFFFFF chunk(4)}, which sort
 * after every table id. Each value is {@code crc32c(4) last(1) bytes}, its checksum over the key and
 * the rest of the value. So a damaged byte, a lost, repeated or reordered entry, or a file cut short
 * fails the load, which then quarantines the store.
 */
final class Checkpoint {
    static final int CHUNK = 8 * 1024;
    private static final int NODE_SIZE = 32;
    private static final long PAGE_SIZE = 1 << 20;
    private static final int SLICE_SHIFT = 20;
    private static final byte[] STATE_PREFIX = {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF};
    /** Before every table id: how many rows each table has, so that the load sizes its maps once. */
    private static final byte[] SIZES_PREFIX = {0, 0, 0, 0};

    private final Path file;
    private SortedTableMap.Sink<byte[], byte[]> sink;
    private long rowEntries;
    private final CRC32C digest = new CRC32C();

    private Checkpoint(Path file) {
        this.file = file;
    }

    /**
     * Writes the committed content of {@code store} as generation {@code generation}: to a temp file,
     * forced, then renamed into place. Returns the checkpoint's size in bytes.
     */
    static long write(StoreFiles files, int format, long generation, MemoryStore store) throws IOException {
        Path temp = files.checkpointTemp(generation);
        Files.deleteIfExists(temp);
        Volume vol = new MappedFileVol(temp.toFile(), false, 0L, SLICE_SHIFT, true, 0L, false);
        try {
            Checkpoint c = new Checkpoint(temp);
            c.sink = SortedTableMap.Companion.create(vol, Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY)
                    .pageSize(PAGE_SIZE).nodeSize(NODE_SIZE).createFromSink();
            c.putChunked(SIZES_PREFIX, sizes(store), 0, false);
            for (int table : store.rows.tableIds()) {
                for (byte[] row : store.rows.rowsInKeyOrder(table)) {
                    c.putChunked(rowPrefix(table, row), row, PackedRow.keyEnd(row), true);
                }
            }
            c.putChunked(STATE_PREFIX, c.state(format, generation, store), 0, false);
            c.sink.create();
            vol.sync();
        } finally {
            vol.close();
        }
        Path target = files.checkpoint(generation);
        StoreFiles.commitRename(temp, target);
        return Files.size(target);
    }

    private static byte[] sizes(MemoryStore store) {
        ByteSink out = new ByteSink(64);
        java.util.List<Integer> ids = store.rows.tableIds();
        out.writeLength(ids.size());
        for (int table : ids) {
            out.writeInt(table).writeLength(store.rows.size(table));
        }
        return out.toByteArray();
    }

    /** The entry key's prefix of a row: table id, then the key the row carries. */
    private static byte[] rowPrefix(int table, byte[] row) {
        int keyLength = PackedRow.keyEnd(row) - PackedRow.KEY_AT;
        byte[] p = new byte[4 + keyLength];
        ByteBuffer.wrap(p).putInt(table);
        System.arraycopy(row, PackedRow.KEY_AT, p, 4, keyLength);
        return p;
    }

    /** Writes {@code bytes[offset, length)} under {@code prefix}, in chunks. */
    private void putChunked(byte[] prefix, byte[] bytes, int offset, boolean isRow) {
        int chunks = Math.max(1, (bytes.length - offset + CHUNK - 1) / CHUNK);
        for (int i = 0; i < chunks; i++) {
            int from = offset + i * CHUNK;
            int to = Math.min(bytes.length, from + CHUNK);
            byte[] key = Arrays.copyOf(prefix, prefix.length + 4);
            ByteBuffer.wrap(key).putInt(prefix.length, i);
            byte[] value = new byte[5 + to - from];
            value[4] = (byte) (i == chunks - 1 ? 1 : 0);
            System.arraycopy(bytes, from, value, 5, to - from);
            int crc = checksum(key, value);
            ByteBuffer.wrap(value).putInt(0, crc);
            sink.put(key, value);
            if (isRow) {
                rowEntries++;
                digest.update(value, 0, 4);
            }
        }
    }

    private byte[] state(int format, long generation, MemoryStore store) {
        ByteSink out = new ByteSink(4096);
        out.writeInt(format).writeLong(generation).writeLong(rowEntries).writeInt((int) digest.getValue());
        out.writeLong(store.meta.watermark()).writeLong(store.meta.historyStart());
        Map<String, Integer> tables = store.tables.all();
        out.writeLength(tables.size());
        tables.forEach((name, id) -> out.writeInt(id).writeString(name));
        Map<Long, byte[]> schemas = store.schemas.all();
        out.writeLength(schemas.size());
        schemas.forEach((id, bytes) -> out.writeLong(id).writeBytesWithLength(bytes));
        Map<String, String> meta = store.meta.allMeta();
        out.writeLength(meta.size());
        meta.forEach((k, v) -> out.writeString(k).writeString(v));
        Map<ByteBuffer, byte[]> offsets = store.meta.allOffsets();
        out.writeLength(offsets.size());
        offsets.forEach((k, v) -> {
            ByteBuffer d = k.duplicate();
            byte[] kb = new byte[d.remaining()];
            d.get(kb);
            out.writeBytesWithLength(kb).writeBytesWithLength(v);
        });
        return out.toByteArray();
    }

    /** Loads checkpoint {@code generation} into the empty {@code store}, verifying every entry. */
    static void load(Path file, int format, long generation, MemoryStore store) {
        if (!Files.isRegularFile(file)) {
            throw new StoreCorruptedException(file, "the manifest names checkpoint " + file.getFileName() + ", which does not exist");
        }
        Volume vol = new MappedFileVol(file.toFile(), true, 0L, SLICE_SHIFT, true, 0L, false);
        try {
            new Checkpoint(file).loadFrom(vol, format, generation, store);
        } catch (StoreCorruptedException e) {
            throw e;
        } catch (RuntimeException | AssertionError e) {
            // MapDB 3.1.0 fails on damaged page structure with runtime errors and its internal assertions (CC.ASSERT).
            throw new StoreCorruptedException(file, "the checkpoint " + file.getFileName() + " does not read back: " + e, e);
        } finally {
            vol.close();
        }
    }

    private void loadFrom(Volume vol, int format, long generation, MemoryStore store) {
        SortedTableMap<byte[], byte[]> map = SortedTableMap.Companion.open(vol, Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY);
        Iterator<Map.Entry<byte[], byte[]>> it = map.entryIterator();
        byte[] previousKey = null;
        byte[] currentPrefix = null;
        ByteSink pending = null;
        int expectedChunk = 0;
        long limit = vol.length();
        while (it.hasNext()) {
            Map.Entry<byte[], byte[]> e = it.next();
            byte[] key = e.getKey();
            byte[] value = e.getValue();
            if (key == null || value == null || key.length < 8 || value.length < 5 || value[4] > 1
                    || ByteBuffer.wrap(value).getInt(0) != checksum(key, value)) {
                throw damaged("an entry fails its checksum");
            }
            if (previousKey == null) {
                presize(key, value, store);
                previousKey = key;
                continue;
            }
            if (Arrays.compareUnsigned(previousKey, key) >= 0) {
                throw damaged("entries are out of order");
            }
            previousKey = key;
            boolean isState = Arrays.equals(key, 0, 4, STATE_PREFIX, 0, 4) && key.length == 8;
            if (!isState && ++rowEntries > limit) {
                throw damaged("more entries than the file has bytes");
            }
            if (!isState) {
                digest.update(value, 0, 4);
            }
            int chunk = ByteBuffer.wrap(key).getInt(key.length - 4);
            boolean last = value[4] == 1;
            if (chunk == 0 && last && pending == null) {
                // The common case, a row in one chunk: no buffer, one copy.
                if (isState) {
                    restoreState(Arrays.copyOfRange(value, 5, value.length), format, generation, store);
                    if (it.hasNext()) {
                        throw damaged("entries follow the store state");
                    }
                    return;
                }
                loadRow(key, key.length - 4, value, 5, value.length, store);
                continue;
            }
            byte[] prefix = Arrays.copyOf(key, key.length - 4);
            if (chunk == 0) {
                if (pending != null) {
                    throw damaged("a row's chunks end early");
                }
                currentPrefix = prefix;
                pending = new ByteSink(value.length);
            } else if (pending == null || chunk != expectedChunk || !Arrays.equals(prefix, currentPrefix)) {
                throw damaged("a row's chunks are incomplete");
            }
            pending.write(value, 5, value.length - 5);
            expectedChunk = chunk + 1;
            if (last) {
                byte[] bytes = pending.toByteArray();
                pending = null;
                expectedChunk = 0;
                if (isState) {
                    restoreState(bytes, format, generation, store);
                    if (it.hasNext()) {
                        throw damaged("entries follow the store state");
                    }
                    return;
                }
                loadRow(prefix, prefix.length, bytes, 0, bytes.length, store);
            }
        }
        throw damaged("the store state is missing (the file is cut short)");
    }

    /** The first entry: every table's row count (one chunk: a few bytes per table). */
    private void presize(byte[] key, byte[] value, MemoryStore store) {
        if (key.length != 8 || !Arrays.equals(key, 0, 4, SIZES_PREFIX, 0, 4) || ByteBuffer.wrap(key).getInt(4) != 0 || value[4] != 1) {
            throw damaged("it does not start with its table sizes");
        }
        try {
            ByteSource in = new ByteSource(value, 5);
            for (int i = in.readLength(); i > 0; i--) {
                store.rows.presize(in.readInt(), in.readLength());
            }
            if (!in.atEnd()) {
                throw damaged("trailing bytes after its table sizes");
            }
        } catch (MalformedEncodingException e) {
            throw damaged("its table sizes do not decode: " + e.getMessage());
        }
    }

    /** Loads the packed row {@code packed[from, to)} whose key is {@code key[0, prefixLength)}: table id, then row key. */
    private void loadRow(byte[] key, int prefixLength, byte[] packed, int from, int to, MemoryStore store) {
        byte[] row;
        try {
            row = PackedRow.keyed(key, 4, prefixLength, packed, from, to);
        } catch (MalformedEncodingException e) {
            throw damaged("a row does not decode: " + e.getMessage());
        }
        store.rows.load(ByteBuffer.wrap(key).getInt(0), row);
    }

    private void restoreState(byte[] bytes, int format, long generation, MemoryStore store) {
        try {
            ByteSource in = new ByteSource(bytes, 0);
            if (in.readInt() != format || in.readLong() != generation) {
                throw damaged("its state names another format or generation");
            }
            if (in.readLong() != rowEntries || in.readInt() != (int) digest.getValue()) {
                throw damaged("entries are missing or repeated");
            }
            long watermark = in.readLong();
            long historyStart = in.readLong();
            for (int i = in.readLength(); i > 0; i--) {
                int id = in.readInt();
                store.tables.restore(id, in.readString());
            }
            for (int i = in.readLength(); i > 0; i--) {
                long id = in.readLong();
                store.schemas.restore(id, in.readBytesWithLength());
            }
            for (int i = in.readLength(); i > 0; i--) {
                store.meta.setMeta(in.readString(), in.readString());
            }
            for (int i = in.readLength(); i > 0; i--) {
                store.meta.putOffset(in.readBytesWithLength(), in.readBytesWithLength());
            }
            if (!in.atEnd()) {
                throw damaged("trailing bytes after its state");
            }
            store.meta.restore(watermark, historyStart);
            for (int table : store.rows.tableIds()) {
                if (!store.tables.all().containsValue(table)) {
                    throw damaged("rows of table id " + table + ", which the table dictionary does not hold");
                }
            }
            store.onCommit();
        } catch (MalformedEncodingException e) {
            throw damaged("its state does not decode: " + e.getMessage());
        }
    }

    private StoreCorruptedException damaged(String what) {
        return new StoreCorruptedException(file, "the checkpoint " + file.getFileName() + " is damaged: " + what);
    }

    private static int checksum(byte[] key, byte[] value) {
        CRC32C c = new CRC32C();
        c.update(key, 0, key.length);
        c.update(value, 4, value.length - 4);
        return (int) c.getValue();
    }
}
