package io.asofconnect.windowjoin.state;

import io.asofconnect.common.data.ByteSink;
import io.asofconnect.common.data.ByteSource;
import io.asofconnect.common.data.RowCodec;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.mapdb.BTreeMap;
import org.mapdb.DB;
import org.mapdb.DBMaker;
import org.mapdb.Serializer;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.function.Consumer;

/**
 * The records a task holds in its windows, in one MapDB file of its own. Scratch: the file is created empty when the
 * task starts and deleted when it stops, because the state is rebuilt from the input log after a restart (the
 * committed offsets say from where); so MapDB runs without its write-ahead log, whose commits would force the whole
 * file to disk for a durability nobody needs.
 *
 * <p>Two ordered maps. {@code rows}, keyed {@code partition side keyLength key time offset}, answers a probe (the
 * records of one side with one key in a time range) with one range scan. {@code ends}, keyed {@code partition side
 * windowEnd offset}, lists the records whose window has closed first. Times are stored sign-flipped big-endian, so
 * that MapDB's unsigned byte order is numeric order.
 *
 * <p>Values carry a schema id: schemas are kept in memory (the file never outlives the task), each distinct schema
 * once. One thread at a time.
 */
public final class WindowStore implements AutoCloseable {
    private final DB db;
    private final BTreeMap<byte[], byte[]> rows;
    private final BTreeMap<byte[], byte[]> ends;
    private final Path file;
    private final List<Schema> schemas = new ArrayList<>();
    private final Map<Schema, Integer> schemaIds = new HashMap<>();
    /** The last schemas seen, by identity: a converter hands the same instance to record after record. */
    private final Map<Schema, Integer> recentIds = new IdentityHashMap<>();
    private long size;

    private WindowStore(Path file) {
        this.file = file;
        this.db = DBMaker.fileDB(file.toFile()).fileMmapEnableIfSupported().cleanerHackEnable()
                .fileDeleteAfterClose().make();
        this.rows = db.treeMap("rows", Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY).create();
        this.ends = db.treeMap("ends", Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY).create();
    }

    /** A new, empty store in a new file under {@code dir} named after {@code owner}. */
    public static WindowStore create(Path dir, String owner) throws IOException {
        Files.createDirectories(dir);
        Path file = Files.createTempFile(dir, safe(owner) + "-", ".mapdb");
        Files.delete(file);
        return new WindowStore(file);
    }

    private static String safe(String owner) {
        return owner.replaceAll("[^A-Za-z0-9_.-]", "_");
    }

    public Path file() {
        return file;
    }

    /** Holds a record until {@link #closeWindows} passes {@code windowEnd}. */
    public void put(HeldRecord r, long windowEnd) {
        byte[] rowKey = rowKey(r.partition(), r.side(), r.key(), r.time(), r.offset());
        rows.put(rowKey, encode(r));
        ends.put(endKey(r.partition(), r.side(), windowEnd, r.offset()), rowKey);
        size++;
    }

    /** Rewrites a held record's value (its matched flag and lowest partner). */
    public void update(HeldRecord r) {
        rows.put(rowKey(r.partition(), r.side(), r.key(), r.time(), r.offset()), encode(r));
    }

    /** Every held record of {@code side} in {@code partition} with {@code key} and a time in {@code [from, to]}. */
    public List<HeldRecord> probe(int partition, Side side, byte[] key, long from, long to) {
        if (from > to) {
            return List.of();
        }
        byte[] lo = rowKey(partition, side, key, from, Long.MIN_VALUE);
        byte[] hi = rowKey(partition, side, key, to, Long.MAX_VALUE);
        List<HeldRecord> found = new ArrayList<>();
        for (Map.Entry<byte[], byte[]> e : rows.subMap(lo, true, hi, true).entrySet()) {
            found.add(decode(e.getKey(), e.getValue()));
        }
        return found;
    }

    /**
     * Removes the records of {@code side} in {@code partition} whose window end is before {@code end}, in end order,
     * handing each to {@code closed} first.
     */
    public void closeWindows(int partition, Side side, long end, Consumer<HeldRecord> closed) {
        if (end == Long.MIN_VALUE) {
            return;
        }
        byte[] lo = endKey(partition, side, Long.MIN_VALUE, Long.MIN_VALUE);
        byte[] hi = endKey(partition, side, end, Long.MIN_VALUE);
        NavigableMap<byte[], byte[]> due = ends.subMap(lo, true, hi, false);
        List<byte[]> done = new ArrayList<>();
        for (Map.Entry<byte[], byte[]> e : due.entrySet()) {
            byte[] rowKey = e.getValue();
            byte[] value = rows.remove(rowKey);
            if (value != null) {
                closed.accept(decode(rowKey, value));
                size--;
            }
            done.add(e.getKey());
        }
        done.forEach(ends::remove);
    }

    /** Forgets every record of {@code partition}: its state is about to be rebuilt from the log. */
    public void clear(int partition) {
        for (BTreeMap<byte[], byte[]> map : List.of(rows, ends)) {
            byte[] lo = ByteBuffer.allocate(4).putInt(partition ^ Integer.MIN_VALUE).array();
            byte[] hi = ByteBuffer.allocate(4).putInt((partition ^ Integer.MIN_VALUE) + 1).array();
            List<byte[]> keys = new ArrayList<>(map.subMap(lo, true, hi, false).keySet());
            if (map == rows) {
                size -= keys.size();
            }
            keys.forEach(map::remove);
        }
    }

    /** Records held, over all partitions. */
    public long size() {
        return size;
    }

    /** Bytes the file takes on disk (its allocated length; mapped pages may not all be written). */
    public long fileBytes() {
        try {
            return Files.size(file);
        } catch (IOException e) {
            return -1L;
        }
    }

    private static byte[] rowKey(int partition, Side side, byte[] key, long time, long offset) {
        return ByteBuffer.allocate(4 + 1 + 4 + key.length + 8 + 8)
                .putInt(partition ^ Integer.MIN_VALUE).put((byte) side.ordinal()).putInt(key.length).put(key)
                .putLong(time ^ Long.MIN_VALUE).putLong(offset ^ Long.MIN_VALUE).array();
    }

    private static byte[] endKey(int partition, Side side, long end, long offset) {
        return ByteBuffer.allocate(4 + 1 + 8 + 8).putInt(partition ^ Integer.MIN_VALUE).put((byte) side.ordinal())
                .putLong(end ^ Long.MIN_VALUE).putLong(offset ^ Long.MIN_VALUE).array();
    }

    private byte[] encode(HeldRecord r) {
        ByteSink out = new ByteSink(64);
        out.write(r.matched() ? 1 : 0);
        out.writeLong(r.minPartner());
        out.writeUnsignedVarLong(schemaId(r.value().schema()));
        RowCodec.writeStruct(r.value(), out);
        return out.toByteArray();
    }

    private HeldRecord decode(byte[] rowKey, byte[] value) {
        ByteBuffer k = ByteBuffer.wrap(rowKey);
        int partition = k.getInt() ^ Integer.MIN_VALUE;
        Side side = Side.values()[k.get()];
        byte[] key = new byte[k.getInt()];
        k.get(key);
        long time = k.getLong() ^ Long.MIN_VALUE;
        long offset = k.getLong() ^ Long.MIN_VALUE;
        ByteSource in = new ByteSource(value, 0);
        boolean matched = in.read() == 1;
        long minPartner = in.readLong();
        Schema schema = schemas.get((int) in.readUnsignedVarLong());
        Struct struct = RowCodec.readStruct(schema, in);
        return new HeldRecord(partition, side, key, time, offset, struct, matched, minPartner);
    }

    private int schemaId(Schema schema) {
        Integer id = recentIds.get(schema);
        if (id == null) {
            id = schemaIds.computeIfAbsent(schema, s -> {
                schemas.add(s);
                return schemas.size() - 1;
            });
            if (recentIds.size() > 64) {
                recentIds.clear();
            }
            recentIds.put(schema, id);
        }
        return id;
    }

    @Override
    public void close() {
        if (!db.isClosed()) {
            db.close();
        }
    }
}
