package io.asofconnect.replica.store;

import io.asofconnect.lookup.RowKey;
import io.asofconnect.lookup.SourcePosition;
import io.asofconnect.lookup.Version;
import io.asofconnect.lookup.VersionId;
import org.mapdb.BTreeMap;
import org.mapdb.DB;
import org.mapdb.DBException;
import org.mapdb.DBMaker;
import org.mapdb.Serializer;
import org.mapdb.serializer.SerializerArrayTuple;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;
import java.util.zip.CRC32C;

/**
 * The version store in one MapDB 3.1.0 file, written through MapDB's write-ahead log
 * ({@code transactionEnable}): a {@link #commit()} is one {@code db.commit()}, so versions, offsets and
 * the watermark become durable together, and a crash reopens at the last commit.
 *
 * <p>Layout of the file:
 * <ul>
 *   <li>{@code versions}: BTreeMap (table, row key bytes, valid-from, lsn, ordinal) → version bytes
 *       ({@link VersionCodec}: a CRC32C over key and value, then kind, schema id and the row encoded by
 *       walking its schema, {@link RowCodec}). Tuples sort field by field, so one key's versions are
 *       contiguous and in (valid-from, position) order: {@link #floor} is one {@code floorEntry} on
 *       (table, key, t, MAX, MAX) and a check that the entry found has the same table and key.</li>
 *   <li>{@code schemas}: BTreeMap schema id → schema bytes, each distinct row schema once
 *       ({@link SchemaRegistry}).</li>
 *   <li>{@code offsets}: BTreeMap byte[] → byte[], the engine's source offsets.</li>
 *   <li>{@code meta}: BTreeMap String → String: the caller's metadata, plus the reserved keys
 *       {@value #FORMAT_KEY}, {@value #WATERMARK_KEY}, {@value #HISTORY_START_KEY} and
 *       {@value #INTEGRITY_KEY} (a CRC32C over every other meta entry and every offset, refreshed on
 *       each commit).</li>
 * </ul>
 *
 * <p>Opening an existing file reads it back before trusting it (see {@link StoreOptions.Verification}):
 * a file MapDB cannot open, a format version other than {@value #FORMAT_VERSION}, a failed checksum,
 * or a WAL with no store file is moved aside ({@link Quarantine}) and a fresh, empty store is created:
 * {@link OpenOutcome.Kind#REBUILT}. Damage found later, on a read, is a {@link StoreCorruptedException},
 * never a wrong row. MapDB does not support record checksums together with transactions, so B-tree
 * nodes carry none: a damaged separator that misroutes a search is caught by cross-checking every
 * floor against the leaf order ({@link #floorLocked}); {@link #find} (a point get) has no such
 * cross-check and can answer "no such version" for a version behind a damaged separator.
 *
 * <p>Threads: one writer (every mutating method, {@link #commit()}, {@link #rollback()}); any number of
 * concurrent readers. Readers share a read lock and each single modification of a map takes it
 * exclusively (MapDB 3.1.0's B-tree lost entries to concurrent floor reads during node splits without
 * it); {@code db.commit()} runs without it, and floor reads during commits are tested.
 */
public final class MapDbVersionStore implements VersionStore {
    private static final Logger LOG = LoggerFactory.getLogger(MapDbVersionStore.class);

    static final String FORMAT_VERSION = "1";
    static final String FORMAT_KEY = "store.format";
    static final String WATERMARK_KEY = "store.watermark";
    static final String HISTORY_START_KEY = "store.historyStart";
    static final String INTEGRITY_KEY = "store.integrity";
    private static final String RESERVED_PREFIX = "store.";
    /** Versions read from each end of the versions map when opening with {@link StoreOptions.Verification#SAMPLE}. */
    public static final int VERIFY_SAMPLE = 1000;

    private final Path file;
    private final StoreFileLock lock;
    private final DB db;
    private final BTreeMap<Object[], byte[]> versions;
    private final BTreeMap<byte[], byte[]> offsets;
    private final BTreeMap<String, String> meta;
    private final SchemaRegistry schemas;
    private final VersionCodec codec;
    private final OpenOutcome outcome;
    private volatile long committedWatermark;
    private volatile long historyStart;
    private volatile boolean closed;
    /**
     * Guards every map access against the one writer's modifications. MapDB 3.1.0's B-tree is meant to
     * allow lock-free reads, but StoreConcurrencyTest caught {@code floorEntry} missing an entry committed
     * long before while the writer was putting other keys (node splits), so readers share this lock
     * and each single modification takes it exclusively; commits and the writer's own iteration do not.
     */
    private final ReentrantReadWriteLock rw = new ReentrantReadWriteLock();

    private MapDbVersionStore(Path file, StoreFileLock lock, DB db, StoreOptions options, OpenOutcome outcome) {
        this.file = file;
        this.lock = lock;
        this.db = db;
        this.versions = db.treeMap("versions",
                new SerializerArrayTuple(Serializer.STRING, Serializer.BYTE_ARRAY, Serializer.LONG, Serializer.LONG, Serializer.INTEGER),
                Serializer.BYTE_ARRAY).createOrOpen();
        this.offsets = db.treeMap("offsets", Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY).createOrOpen();
        this.meta = db.treeMap("meta", Serializer.STRING, Serializer.STRING).createOrOpen();
        this.schemas = new SchemaRegistry(file, db.treeMap("schemas", Serializer.LONG, Serializer.BYTE_ARRAY).createOrOpen(),
                options.schemaCacheSize());
        this.codec = new VersionCodec(file, schemas);
        this.outcome = outcome;
    }

    /**
     * Opens the store at {@code file}, creating it if absent and rebuilding it (empty) if it is damaged.
     *
     * @throws StoreLockedException when another store instance, in this or another process, has it open
     */
    public static MapDbVersionStore open(Path file, StoreOptions options) {
        Path abs = file.toAbsolutePath();
        StoreFileLock lock = StoreFileLock.acquire(abs);
        try {
            MapDbVersionStore store = openLocked(abs, lock, options);
            LOG.info("Version store {} open: {} ({})", abs.getFileName(), store.outcome.kind(), store.outcome.reason());
            return store;
        } catch (RuntimeException | Error e) {
            lock.close();
            throw e;
        }
    }

    private static MapDbVersionStore openLocked(Path file, StoreFileLock lock, StoreOptions options) {
        if (!Files.exists(file)) {
            if (Quarantine.walFiles(file).isEmpty()) {
                return createFresh(file, lock, options, OpenOutcome.created());
            }
            return rebuild(file, lock, options, "write-ahead log files without their store file");
        }
        DB db = null;
        try {
            db = maker(file, options).make();
            MapDbVersionStore store = new MapDbVersionStore(file, lock, db, options, OpenOutcome.reopened());
            store.verify(options.verification());
            return store;
        } catch (DBException.FileLocked e) {
            closeQuietly(db);
            throw new StoreLockedException(file, e);
        } catch (Throwable e) {
            closeQuietly(db);
            if (e instanceof VirtualMachineError && !(e instanceof OutOfMemoryError) && !(e instanceof StackOverflowError)) {
                throw (VirtualMachineError) e;
            }
            String reason = e instanceof StoreCorruptedException c ? c.what() : "MapDB could not open the file: " + e;
            return rebuild(file, lock, options, reason);
        }
    }

    private static MapDbVersionStore rebuild(Path file, StoreFileLock lock, StoreOptions options, String reason) {
        Path aside = Quarantine.moveAside(file);
        LOG.warn("Version store {} is unusable and was moved aside to {}; starting an empty store, the replica must take a new snapshot. Reason: {}",
                file.getFileName(), aside.getFileName(), reason);
        return createFresh(file, lock, options, OpenOutcome.rebuilt(reason, aside));
    }

    private static MapDbVersionStore createFresh(Path file, StoreFileLock lock, StoreOptions options, OpenOutcome outcome) {
        DB db = maker(file, options).make();
        try {
            MapDbVersionStore store = new MapDbVersionStore(file, lock, db, options, outcome);
            store.meta.put(FORMAT_KEY, FORMAT_VERSION);
            store.commit();
            store.loadCachedMeta();
            return store;
        } catch (RuntimeException e) {
            closeQuietly(db);
            throw e;
        }
    }

    private static DBMaker.Maker maker(Path file, StoreOptions options) {
        DBMaker.Maker m = DBMaker.fileDB(file.toFile()).transactionEnable();
        return options.memoryMapped() ? m.fileMmapEnableIfSupported() : m.fileChannelEnable();
    }

    private static void closeQuietly(DB db) {
        if (db != null) {
            try {
                db.close();
            } catch (RuntimeException | Error ignored) {
                // The file is damaged or half-open; it is being moved aside or was never ours.
            }
        }
    }

    private void verify(StoreOptions.Verification level) {
        String format = meta.get(FORMAT_KEY);
        if (!FORMAT_VERSION.equals(format)) {
            throw new StoreCorruptedException(file, format == null
                    ? "no format version (the file is not a version store, or its creation was interrupted)"
                    : "format version " + format + ", this build reads " + FORMAT_VERSION);
        }
        String integrity = meta.get(INTEGRITY_KEY);
        if (integrity == null || !integrity.equals(integrity())) {
            throw new StoreCorruptedException(file, "metadata and offsets fail their checksum");
        }
        try {
            loadCachedMeta();
        } catch (NumberFormatException e) {
            throw new StoreCorruptedException(file, "watermark or history start is not a number", e);
        }
        schemas.verifyAll();
        if (level == StoreOptions.Verification.FULL) {
            versions.forEach(codec::decode);
        } else {
            verifySome(versions.entryIterator());
            verifySome(versions.descendingEntryIterator());
        }
    }

    private void verifySome(Iterator<Map.Entry<Object[], byte[]>> it) {
        for (int i = 0; i < VERIFY_SAMPLE && it.hasNext(); i++) {
            Map.Entry<Object[], byte[]> e = it.next();
            codec.decode(e.getKey(), e.getValue());
        }
    }

    private void loadCachedMeta() {
        String w = meta.get(WATERMARK_KEY);
        committedWatermark = w == null ? Long.MIN_VALUE : Long.parseLong(w);
        String h = meta.get(HISTORY_START_KEY);
        historyStart = h == null ? Long.MIN_VALUE : Long.parseLong(h);
    }

    /** CRC32C over every meta entry but this one and every offset, in key order. */
    private String integrity() {
        CRC32C c = new CRC32C();
        ByteSink buf = new ByteSink(256);
        for (Map.Entry<String, String> e : meta.entrySet()) {
            if (!e.getKey().equals(INTEGRITY_KEY)) {
                buf.writeString(e.getKey()).writeString(e.getValue());
            }
        }
        buf.write(0xFF);
        for (Map.Entry<byte[], byte[]> e : offsets.entrySet()) {
            buf.writeBytesWithLength(e.getKey()).writeBytesWithLength(e.getValue());
        }
        c.update(buf.array(), 0, buf.size());
        return Long.toHexString(c.getValue());
    }

    /** How many distinct row schemas the file holds. */
    public int schemaCount() {
        return schemas.verifyAll();
    }

    /** The store file. */
    public Path file() {
        return file;
    }

    private static Object[] tuple(String table, byte[] key, long validFrom, long lsn, int ordinal) {
        return new Object[]{table, key, validFrom, lsn, ordinal};
    }

    private <T> T read(Supplier<T> r) {
        rw.readLock().lock();
        try {
            return r.get();
        } finally {
            rw.readLock().unlock();
        }
    }

    private void write(Runnable w) {
        rw.writeLock().lock();
        try {
            w.run();
        } finally {
            rw.writeLock().unlock();
        }
    }

    @Override
    public void put(String table, RowKey key, Version version) {
        byte[] k = key.encoded();
        SourcePosition p = version.position();
        write(() -> versions.put(tuple(table, k, version.validFrom(), p.lsn(), p.ordinal()), codec.encode(table, k, version)));
    }

    @Override
    public Optional<Version> floor(String table, RowKey key, long timestamp) {
        byte[] k = key.encoded();
        return floorOf(table, k, tuple(table, k, timestamp, Long.MAX_VALUE, Integer.MAX_VALUE));
    }

    @Override
    public Optional<Version> latest(String table, RowKey key) {
        byte[] k = key.encoded();
        // In MapDB's tuple order a null element sorts after everything: this is past every version of the key.
        return floorOf(table, k, new Object[]{table, k, null});
    }

    private Optional<Version> floorOf(String table, byte[] k, Object[] probe) {
        return read(() -> floorLocked(table, k, probe));
    }

    /**
     * One {@code floorEntry}, then a second descent that must agree with it: the entry after the one
     * found (or, if none was found, the key's first entry) must lie past the probe. A damaged B-tree
     * separator can route a search to the wrong leaf, where the floor would be an older, intact
     * version of the key (seen in StoreCorruptionTest); the second walk follows the leaf links instead
     * and exposes that. It costs a second descent per lookup, and is the price of never answering
     * with a wrong row.
     */
    private Optional<Version> floorLocked(String table, byte[] k, Object[] probe) {
        Map.Entry<Object[], byte[]> e;
        Object[] check;
        try {
            e = versions.floorEntry(probe);
            boolean found = e != null && table.equals(e.getKey()[0]) && Arrays.equals(k, (byte[]) e.getKey()[1]);
            if (!found) {
                e = null;
            }
            check = found ? versions.higherKey(e.getKey()) : versions.ceilingKey(new Object[]{table, k});
        } catch (RuntimeException ex) {
            throw readFailure(table, ex);
        }
        if (check != null && table.equals(check[0]) && Arrays.equals(k, (byte[]) check[1])
                && versions.comparator().compare(check, probe) <= 0) {
            throw new StoreCorruptedException(file, "the versions index of table " + table
                    + " is inconsistent (a lookup and the leaf order disagree)");
        }
        return e == null ? Optional.empty() : Optional.of(codec.decode(e.getKey(), e.getValue()));
    }

    @Override
    public Optional<Version> find(String table, RowKey key, VersionId id) {
        byte[] k = key.encoded();
        Object[] t = tuple(table, k, id.validFrom(), id.position().lsn(), id.position().ordinal());
        return read(() -> {
            byte[] v;
            try {
                v = versions.get(t);
            } catch (RuntimeException ex) {
                throw readFailure(table, ex);
            }
            return v == null ? Optional.<Version>empty() : Optional.of(codec.decode(t, v));
        });
    }

    @Override
    public List<Version> history(String table, RowKey key) {
        return read(() -> historyLocked(table, key));
    }

    private List<Version> historyLocked(String table, RowKey key) {
        List<Version> out = new ArrayList<>();
        try {
            for (Map.Entry<Object[], byte[]> e : versions.prefixSubMap(new Object[]{table, key.encoded()}).entrySet()) {
                out.add(codec.decode(e.getKey(), e.getValue()));
            }
        } catch (StoreCorruptedException ex) {
            throw ex;
        } catch (RuntimeException ex) {
            throw readFailure(table, ex);
        }
        return out;
    }

    /** Lazily walks the table's keys, jumping from one key past all its versions to the next. */
    @Override
    public Iterable<RowKey> keys(String table) {
        return () -> new Iterator<>() {
            private Object[] next = read(() -> versions.ceilingKey(new Object[]{table}));

            @Override
            public boolean hasNext() {
                return next != null && table.equals(next[0]);
            }

            @Override
            public RowKey next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                byte[] k = (byte[]) next[1];
                try {
                    next = read(() -> versions.higherKey(new Object[]{table, k, null}));
                    return RowKey.decode(k);
                } catch (RuntimeException ex) {
                    throw readFailure(table, ex);
                }
            }
        };
    }

    private RuntimeException readFailure(String table, RuntimeException e) {
        if (e instanceof StoreCorruptedException || e instanceof DBException.VolumeClosed) {
            return e;
        }
        return new StoreCorruptedException(file, "reading versions of table " + table + " failed in MapDB", e);
    }

    @Override
    public void putOffset(ByteBuffer key, ByteBuffer value) {
        byte[] k = bytes(key);
        byte[] v = bytes(value);
        write(() -> offsets.put(k, v));
    }

    private static byte[] bytes(ByteBuffer b) {
        ByteBuffer d = b.duplicate();
        byte[] out = new byte[d.remaining()];
        d.get(out);
        return out;
    }

    @Override
    public Map<ByteBuffer, ByteBuffer> offsets() {
        return read(() -> {
            Map<ByteBuffer, ByteBuffer> out = new LinkedHashMap<>();
            for (Map.Entry<byte[], byte[]> e : offsets.entrySet()) {
                out.put(ByteBuffer.wrap(e.getKey()), ByteBuffer.wrap(e.getValue()));
            }
            return out;
        });
    }

    @Override
    public void setWatermark(long watermark) {
        write(() -> meta.put(WATERMARK_KEY, Long.toString(watermark)));
    }

    @Override
    public long watermark() {
        return committedWatermark;
    }

    @Override
    public void setMeta(String key, String value) {
        if (key.startsWith(RESERVED_PREFIX)) {
            throw new IllegalArgumentException("meta key '" + key + "' is reserved: keys starting with '" + RESERVED_PREFIX
                    + "' belong to the store itself; use another prefix");
        }
        write(() -> {
            if (value == null) {
                meta.remove(key);
            } else {
                meta.put(key, value);
            }
        });
    }

    @Override
    public Optional<String> meta(String key) {
        return read(() -> Optional.ofNullable(meta.get(key)));
    }

    @Override
    public long prune(long horizon) {
        long removed = 0;
        List<Object[]> before = new ArrayList<>();
        Object[] current = null;
        Iterator<Map.Entry<Object[], byte[]>> it = versions.entryIterator();
        Map.Entry<Object[], byte[]> last = null;
        while (true) {
            Map.Entry<Object[], byte[]> e = it.hasNext() ? it.next() : null;
            if (e == null || current == null || !sameKey(current, e.getKey())) {
                removed += pruneKey(before, last);
                before.clear();
                last = null;
                if (e == null) {
                    break;
                }
                current = e.getKey();
            }
            if ((Long) e.getKey()[2] < horizon) {
                before.add(e.getKey());
                last = e;
            }
        }
        if (horizon > historyStart) {
            setHistoryStart(horizon);
        }
        return removed;
    }

    /** Removes all of one key's versions before the horizon except the newest, and that one too if it is a tombstone. */
    private long pruneKey(List<Object[]> before, Map.Entry<Object[], byte[]> newestBefore) {
        if (before.isEmpty()) {
            return 0;
        }
        int keep = codec.isTombstone(newestBefore.getKey(), newestBefore.getValue()) ? 0 : 1;
        int n = before.size() - keep;
        write(() -> {
            for (int i = 0; i < n; i++) {
                versions.remove(before.get(i));
            }
        });
        return n;
    }

    private static boolean sameKey(Object[] a, Object[] b) {
        return a[0].equals(b[0]) && Arrays.equals((byte[]) a[1], (byte[]) b[1]);
    }

    @Override
    public long historyStart() {
        return historyStart;
    }

    @Override
    public void setHistoryStart(long historyStart) {
        write(() -> meta.put(HISTORY_START_KEY, Long.toString(historyStart)));
        this.historyStart = historyStart;
    }

    @Override
    public void commit() {
        String integrity = integrity();
        write(() -> meta.put(INTEGRITY_KEY, integrity));
        db.commit();
        String w = meta.get(WATERMARK_KEY);
        committedWatermark = w == null ? Long.MIN_VALUE : Long.parseLong(w);
    }

    @Override
    public void rollback() {
        write(() -> {
            db.rollback();
            schemas.onRollback();
            loadCachedMeta();
        });
    }

    @Override
    public OpenOutcome openOutcome() {
        return outcome;
    }

    /** Discards writes since the last commit, closes the file and releases its lock. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            // Close means "stop", never "commit": what was not committed is dropped, as after a crash.
            write(() -> {
                db.rollback();
                db.close();
            });
        } finally {
            lock.close();
        }
    }
}
