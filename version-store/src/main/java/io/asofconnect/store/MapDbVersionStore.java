package io.asofconnect.store;

import io.asofconnect.lookup.RowKey;
import io.asofconnect.lookup.SourcePosition;
import io.asofconnect.lookup.Version;
import io.asofconnect.lookup.VersionId;
import org.mapdb.BTreeMap;
import org.mapdb.DB;
import org.mapdb.DBException;
import org.mapdb.DBMaker;
import org.mapdb.Serializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.concurrent.locks.StampedLock;
import java.util.function.Supplier;
import java.util.zip.CRC32C;

/**
 * The version store in one MapDB 3.1.0 file, written through MapDB's write-ahead log
 * ({@code transactionEnable}): a {@link #commit()} is one {@code db.commit()}, so versions, offsets and
 * the watermark become durable together, and a crash reopens at the last commit.
 *
 * <p>Layout of the file (format {@value #FORMAT_VERSION}):
 * <ul>
 *   <li>{@code versions}: BTreeMap byte[] → byte[]. The key is {@link VersionKey}: table id, row key
 *       bytes, valid-from, lsn, ordinal, in one array whose unsigned byte order is the store's order,
 *       so one row's versions are contiguous and in (valid-from, position) order; MapDB compares keys
 *       without decoding them and stores each node's common prefix once ({@code BYTE_ARRAY_DELTA}).
 *       The value is {@link VersionCodec}: a CRC32C over key and value, then kind (with a mark on the
 *       row's oldest version), schema id and the row encoded by walking its schema ({@link RowCodec}).</li>
 *   <li>{@code schemas}: BTreeMap schema id → schema bytes, each distinct row schema once
 *       ({@link SchemaRegistry}).</li>
 *   <li>{@code offsets}: BTreeMap byte[] → byte[], the engine's source offsets.</li>
 *   <li>{@code meta}: BTreeMap String → String: the caller's metadata, plus the reserved keys
 *       {@value #FORMAT_KEY}, {@value #WATERMARK_KEY}, {@value #HISTORY_START_KEY}, the table
 *       dictionary ({@link TableDictionary}) and {@value #INTEGRITY_KEY} (a CRC32C over every other
 *       meta entry and every offset, refreshed on each commit).</li>
 * </ul>
 *
 * <p>Opening an existing file reads it back before trusting it (see {@link StoreOptions.Verification}):
 * a file MapDB cannot open, a format version other than {@value #FORMAT_VERSION} (format 1 files
 * included: the replica takes a new snapshot), a failed checksum, or a WAL with no store file is moved
 * aside ({@link Quarantine}) and a fresh, empty store is created: {@link OpenOutcome.Kind#REBUILT}.
 * Damage found later, on a read, is a {@link StoreCorruptedException}, never a wrong row. MapDB does
 * not support record checksums together with transactions, so B-tree nodes carry none. Every lookup
 * of a row ({@link #floor}, {@link #latest}, {@link #history}) is one forward walk: one descent to the
 * row's first key, then its versions in leaf order up to the first one past the probe. A damaged
 * separator that routes the descent too far left is absorbed (MapDB follows leaf links to the
 * right); one that routes it too far right would skip the row's oldest versions, and is caught
 * because the first version reached must carry the row's "oldest" mark ({@link VersionCodec#FIRST},
 * covered by its checksum; the writer keeps exactly one version per row marked). A damaged leaf link
 * in the middle of a row's versions is not detected; {@link #find} (a point get) has no cross-check
 * and can answer "no such version" for a version behind a damaged separator.
 *
 * <p>Threads: one writer (every mutating method, {@link #commit()}, {@link #rollback()}); any number of
 * concurrent readers. Each single modification of a map takes a {@link StampedLock} exclusively;
 * readers run optimistically and repeat under the read lock if a modification overlapped them (MapDB
 * 3.1.0's B-tree lost entries to concurrent reads during node splits without such a lock, see
 * StoreConcurrencyTest). {@code db.commit()} runs without it, and reads during commits are tested.
 */
public final class MapDbVersionStore implements VersionStore {
    private static final Logger LOG = LoggerFactory.getLogger(MapDbVersionStore.class);

    /** Format 2: byte-array version keys with a table dictionary; format 1 (tuple keys) files are rebuilt. */
    public static final String FORMAT_VERSION = "2";
    static final String FORMAT_KEY = "store.format";
    static final String WATERMARK_KEY = "store.watermark";
    static final String HISTORY_START_KEY = "store.historyStart";
    static final String INTEGRITY_KEY = "store.integrity";
    private static final String RESERVED_PREFIX = "store.";
    /** Versions read from each end of the versions map when opening with {@link StoreOptions.Verification#SAMPLE}. */
    public static final int VERIFY_SAMPLE = 1000;
    /** Keys per B-tree node: MapDB decodes a whole node per visit, so this trades depth against node size. */
    static final int MAX_NODE_SIZE = 32;

    private final Path file;
    private final StoreFileLock lock;
    private final DB db;
    private final BTreeMap<byte[], byte[]> versions;
    private final BTreeMap<byte[], byte[]> offsets;
    private final BTreeMap<String, String> meta;
    private final SchemaRegistry schemas;
    private final TableDictionary tables;
    private final VersionCodec codec;
    private final OpenOutcome outcome;
    private volatile long committedWatermark;
    private volatile long historyStart;
    private volatile boolean closed;
    /**
     * Guards every map access against the one writer's modifications. MapDB 3.1.0's B-tree is meant to
     * allow lock-free reads, but StoreConcurrencyTest caught reads missing an entry committed long
     * before while the writer was putting other keys (node splits). Each single modification takes
     * this lock exclusively; readers read optimistically and validate, so they neither block each
     * other nor the writer; commits and the writer's own iteration do not take it.
     */
    private final StampedLock rw = new StampedLock();

    private MapDbVersionStore(Path file, StoreFileLock lock, DB db, StoreOptions options, OpenOutcome outcome) {
        this.file = file;
        this.lock = lock;
        this.db = db;
        this.meta = db.treeMap("meta", Serializer.STRING, Serializer.STRING).createOrOpen();
        this.versions = db.treeMap("versions", Serializer.BYTE_ARRAY_DELTA, Serializer.BYTE_ARRAY)
                .maxNodeSize(MAX_NODE_SIZE).createOrOpen();
        this.offsets = db.treeMap("offsets", Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY).createOrOpen();
        this.tables = new TableDictionary(file, meta);
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
        java.util.Optional<String> damage = Quarantine.damageReason(file);
        if (damage.isPresent()) {
            return rebuild(file, lock, options, "marked damaged when it was last used: " + damage.get());
        }
        DB db = null;
        try {
            db = maker(file, options).make();
            checkFormat(file, db);
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
            store.tables.reload();
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

    /** Before any map is opened with this format's serializers: an older file is rebuilt, not misread. */
    private static void checkFormat(Path file, DB db) {
        String format = db.exists("meta") ? db.treeMap("meta", Serializer.STRING, Serializer.STRING).open().get(FORMAT_KEY) : null;
        if (!FORMAT_VERSION.equals(format)) {
            throw new StoreCorruptedException(file, format == null
                    ? "no format version (the file is not a version store, or its creation was interrupted)"
                    : "format version " + format + ", this build reads " + FORMAT_VERSION);
        }
    }

    private void verify(StoreOptions.Verification level) {
        String integrity = meta.get(INTEGRITY_KEY);
        if (integrity == null || !integrity.equals(integrity())) {
            throw new StoreCorruptedException(file, "metadata and offsets fail their checksum");
        }
        try {
            loadCachedMeta();
            tables.reload();
        } catch (NumberFormatException e) {
            throw new StoreCorruptedException(file, "watermark or history start is not a number", e);
        }
        schemas.verifyAll();
        if (level == StoreOptions.Verification.FULL) {
            versions.forEach((k, v) -> codec.decode("(any)", k, v));
        } else {
            verifySome(versions.entryIterator());
            verifySome(versions.descendingEntryIterator());
        }
    }

    private void verifySome(Iterator<Map.Entry<byte[], byte[]>> it) {
        for (int i = 0; i < VERIFY_SAMPLE && it.hasNext(); i++) {
            Map.Entry<byte[], byte[]> e = it.next();
            codec.decode("(any)", e.getKey(), e.getValue());
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

    private <T> T read(Supplier<T> r) {
        long stamp = rw.tryOptimisticRead();
        if (stamp != 0) {
            try {
                T result = r.get();
                if (rw.validate(stamp)) {
                    return result;
                }
            } catch (RuntimeException | AssertionError e) {
                // A modification overlapped this read: what it saw proves nothing, read again under the lock.
                if (rw.validate(stamp)) {
                    throw e;
                }
            }
        }
        stamp = rw.readLock();
        try {
            return r.get();
        } finally {
            rw.unlockRead(stamp);
        }
    }

    private void write(Runnable w) {
        long stamp = rw.writeLock();
        try {
            w.run();
        } catch (DBException.VolumeClosed e) {
            throw e;
        } catch (DBException e) {
            // MapDB 3.1.0 can reopen a SIGKILLed WAL store whose free-space lists are damaged and fail only on a
            // later write; the file must then not be trusted again.
            throw damaged("MapDB failed while writing: " + e, e);
        } finally {
            rw.unlockWrite(stamp);
        }
    }

    /** Marks the file damaged (the next open quarantines and rebuilds it) and says so. */
    private StoreCorruptedException damaged(String what, Throwable cause) {
        Quarantine.markDamaged(file, what);
        return new StoreCorruptedException(file, what, cause);
    }

    /**
     * Marks the new version as its row's oldest if it is, and takes the mark from the version that
     * was, so that exactly one version per row carries it.
     */
    @Override
    public void put(String table, RowKey key, Version version) {
        byte[] rowKey = key.encoded();
        SourcePosition p = version.position();
        write(() -> {
            int id = tables.idOrAssign(table);
            byte[] k = VersionKey.of(id, rowKey, version.validFrom(), p.lsn(), p.ordinal());
            byte[] oldest = versions.ceilingKey(VersionKey.rowStart(id, rowKey));
            boolean first = oldest == null || !VersionKey.sameRow(oldest, k) || VersionKey.compare(k, oldest) <= 0;
            if (first && oldest != null && VersionKey.sameRow(oldest, k) && VersionKey.compare(k, oldest) < 0) {
                versions.put(oldest, codec.withFirst(table, oldest, versions.get(oldest), false));
            }
            versions.put(k, codec.encode(k, version, first));
        });
    }

    @Override
    public Optional<Version> floor(String table, RowKey key, long timestamp) {
        int id = tables.id(table);
        if (id == 0) {
            return Optional.empty();
        }
        byte[] rowKey = key.encoded();
        return read(() -> floorLocked(table, id, rowKey, VersionKey.of(id, rowKey, timestamp, Long.MAX_VALUE, Integer.MAX_VALUE)));
    }

    @Override
    public Optional<Version> latest(String table, RowKey key) {
        int id = tables.id(table);
        if (id == 0) {
            return Optional.empty();
        }
        byte[] rowKey = key.encoded();
        return read(() -> floorLocked(table, id, rowKey, VersionKey.rowEnd(id, rowKey)));
    }

    /**
     * One descent to the row's first version, then forward in leaf order to the last version at or
     * before the probe. The first version reached must be marked as the row's oldest: otherwise the
     * descent was routed past some of the row's versions (a damaged B-tree separator, seen in
     * StoreCorruptionTest) and the answer could be an older version or none where a newer one exists.
     */
    private Optional<Version> floorLocked(String table, int id, byte[] rowKey, byte[] probe) {
        byte[] found = null;
        byte[] foundValue = null;
        try {
            Iterator<Map.Entry<byte[], byte[]>> it = versions.entryIterator(VersionKey.rowStart(id, rowKey), true, VersionKey.rowEnd(id, rowKey), true);
            boolean firstSeen = false;
            while (it.hasNext()) {
                Map.Entry<byte[], byte[]> e = it.next();
                byte[] k = e.getKey();
                if (!firstSeen) {
                    firstSeen = true;
                    if (!codec.isFirst(table, k, e.getValue())) {
                        throw inconsistent(table);
                    }
                }
                if (VersionKey.compare(k, probe) > 0) {
                    break;
                }
                found = k;
                foundValue = e.getValue();
            }
        } catch (RuntimeException ex) {
            throw readFailure(table, ex);
        }
        return found == null ? Optional.empty() : Optional.of(codec.decode(table, found, foundValue));
    }

    private StoreCorruptedException inconsistent(String table) {
        return new StoreCorruptedException(file, "the versions index of table " + table
                + " is inconsistent (a lookup did not reach the oldest version of a row)");
    }

    @Override
    public Optional<Version> find(String table, RowKey key, VersionId id) {
        int tableId = tables.id(table);
        if (tableId == 0) {
            return Optional.empty();
        }
        byte[] k = VersionKey.of(tableId, key.encoded(), id.validFrom(), id.position().lsn(), id.position().ordinal());
        return read(() -> {
            byte[] v;
            try {
                v = versions.get(k);
            } catch (RuntimeException ex) {
                throw readFailure(table, ex);
            }
            return v == null ? Optional.<Version>empty() : Optional.of(codec.decode(table, k, v));
        });
    }

    @Override
    public List<Version> history(String table, RowKey key) {
        int id = tables.id(table);
        if (id == 0) {
            return List.of();
        }
        byte[] rowKey = key.encoded();
        return read(() -> historyLocked(table, id, rowKey));
    }

    private List<Version> historyLocked(String table, int id, byte[] rowKey) {
        List<Version> out = new ArrayList<>();
        try {
            Iterator<Map.Entry<byte[], byte[]>> it = versions.entryIterator(VersionKey.rowStart(id, rowKey), true, VersionKey.rowEnd(id, rowKey), true);
            while (it.hasNext()) {
                Map.Entry<byte[], byte[]> e = it.next();
                if (out.isEmpty() && !codec.isFirst(table, e.getKey(), e.getValue())) {
                    throw inconsistent(table);
                }
                out.add(codec.decode(table, e.getKey(), e.getValue()));
            }
        } catch (RuntimeException ex) {
            throw readFailure(table, ex);
        }
        return out;
    }

    /** Lazily walks the table's keys, jumping from one key past all its versions to the next. */
    @Override
    public Iterable<RowKey> keys(String table) {
        return () -> new Iterator<>() {
            private final int id = tables.id(table);
            private byte[] next = id == 0 ? null : read(() -> versions.ceilingKey(VersionKey.tableStart(id)));

            @Override
            public boolean hasNext() {
                return next != null && VersionKey.inTable(next, id);
            }

            @Override
            public RowKey next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                byte[] rowKey = VersionKey.rowKey(next);
                try {
                    next = read(() -> versions.higherKey(VersionKey.rowEnd(id, rowKey)));
                    return RowKey.decode(rowKey);
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
        return damaged("reading versions of table " + table + " failed in MapDB", e);
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
        // Raised before anything is removed: a concurrent as-of read of a time being pruned then reports
        // OutOfHistory (StoreBackedLookup re-reads the start after its floor) instead of a half-pruned row.
        if (horizon > historyStart) {
            setHistoryStart(horizon);
        }
        long removed = 0;
        List<byte[]> before = new ArrayList<>();
        byte[] current = null;
        Map.Entry<byte[], byte[]> newestBefore = null;
        Map.Entry<byte[], byte[]> oldestAfter = null;
        Iterator<Map.Entry<byte[], byte[]>> it = versions.entryIterator();
        while (true) {
            Map.Entry<byte[], byte[]> e = it.hasNext() ? it.next() : null;
            if (e == null || current == null || !VersionKey.sameRow(current, e.getKey())) {
                removed += pruneRow(before, newestBefore, oldestAfter);
                before.clear();
                newestBefore = null;
                oldestAfter = null;
                if (e == null) {
                    break;
                }
                current = e.getKey();
            }
            if (VersionKey.validFrom(e.getKey()) < horizon) {
                before.add(e.getKey());
                newestBefore = e;
            } else if (oldestAfter == null) {
                oldestAfter = e;
            }
        }
        return removed;
    }

    /**
     * Removes all of one row's versions before the horizon except the newest, and that one too if it
     * is a tombstone; the row's oldest remaining version takes the "oldest" mark.
     */
    private long pruneRow(List<byte[]> before, Map.Entry<byte[], byte[]> newestBefore, Map.Entry<byte[], byte[]> oldestAfter) {
        if (before.isEmpty()) {
            return 0;
        }
        String table = "(any)";
        int keep = codec.isTombstone(table, newestBefore.getKey(), newestBefore.getValue()) ? 0 : 1;
        int n = before.size() - keep;
        if (n == 0) {
            return 0;
        }
        Map.Entry<byte[], byte[]> survivor = keep == 1 ? newestBefore : oldestAfter;
        write(() -> {
            for (int i = 0; i < n; i++) {
                versions.remove(before.get(i));
            }
            if (survivor != null && !codec.isFirst(table, survivor.getKey(), survivor.getValue())) {
                versions.put(survivor.getKey(), codec.withFirst(table, survivor.getKey(), survivor.getValue(), true));
            }
        });
        return n;
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
            tables.reload();
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
