package io.asofconnect.store;

import io.asofconnect.common.lookup.Change;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The version store: every version in memory, durable as a MapDB checkpoint plus a journal of the
 * commits since (format {@value #FORMAT_VERSION}).
 *
 * <p>Memory is the index ({@link MemoryStore}): per table, an open-addressing table ({@link RowTable})
 * of rows, each the row's key and whole history packed in one immutable array ({@link PackedRow}). A
 * lookup is one probe of that table and a binary search, and
 * decodes only the version it returns, into a fresh Version. The one writer publishes a new array
 * per touched row; readers never lock and never wait for a commit or a checkpoint.
 *
 * <p>Files, all named after the store path ({@link StoreFiles}): the path itself is the
 * {@link Manifest}, naming generation {@code G}; {@code <path>.checkpoint-G} is an immutable MapDB
 * {@code SortedTableMap} with every row and the store's state, each entry checksummed
 * ({@link Checkpoint}); {@code <path>.journal-G} holds one checksummed record per commit since that
 * checkpoint ({@link Journal}, {@link ChangeLog}). {@link #commit()} appends one record and forces it.
 * When the journal outgrows max({@value #MIN_CHECKPOINT_BYTES} bytes, the last checkpoint's size),
 * the next commit writes checkpoint {@code G+1} and an empty journal {@code G+1}, switches the
 * manifest atomically, then deletes generation {@code G}; {@link #close()} does the same if the
 * journal holds any commit. A crash anywhere in that sequence leaves the manifest naming a complete
 * generation; files of other generations are leftovers and deleted on open.
 *
 * <p>MapDB's own write-ahead log ({@code transactionEnable}) is no longer used: with it, every
 * {@code db.commit()} forced every 1 MB slice of the whole file (9 ms per commit at 100 MB, 170 ms at
 * 2.4 GB) while holding the locks lookups need, and SIGKILLs of such files lost committed versions
 * once, left records MapDB itself could no longer read ("Record does not exist, recid=0"), and
 * exhausted a 128 MB heap after ~59 reopens (StoreCrashTest). A journal append costs the size of its
 * batch, and MapDB keeps the part it is good at: an immutable, sequentially written sorted table.
 *
 * <p>Opening reads the checkpoint whole, verifying every checksum, then replays the journal. A record
 * torn at the journal's tail by a crash during its append is dropped (that commit never returned).
 * Anything else (a missing or damaged manifest, checkpoint or journal, a failing record with valid
 * ones after it, another format, such as the format 2 MapDB file of earlier builds) moves every file
 * of the store aside ({@link Quarantine}) and opens an empty store: {@link OpenOutcome.Kind#REBUILT}.
 * Damage found later, on a read, is a {@link StoreCorruptedException} and a damage marker, so that
 * the next open rebuilds.
 *
 * <p>A store given index or feed declarations ({@link StoreOptions#indexes()}, {@link StoreOptions#feedTables()})
 * also keeps the change feed and the secondary indexes of {@link io.asofconnect.common.lookup.ChangeFeed} in
 * memory ({@link FeedIndexes}): updated at each commit from the versions put since the last one, rebuilt by one
 * scan after open and after a prune that removed versions, never written to the files. A store without
 * declarations does no extra work.
 */
public final class MapDbVersionStore implements VersionStore {
    private static final Logger LOG = LoggerFactory.getLogger(MapDbVersionStore.class);

    /** Format 3: checkpoint + journal + manifest; format 2 (one MapDB B-tree file through MapDB's WAL) is rebuilt. */
    public static final String FORMAT_VERSION = "3";
    private static final int FORMAT = 3;
    private static final String RESERVED_PREFIX = "store.";
    /** The journal size below which no checkpoint is taken, however small the last one. */
    static final long MIN_CHECKPOINT_BYTES = 64L << 20;

    private final Path file;
    private final StoreFiles files;
    private final StoreFileLock lock;
    private final ChangeLog log;
    private final MemoryStore mem;
    private final OpenOutcome outcome;
    /** 0: checkpoint past max(MIN_CHECKPOINT_BYTES, the last checkpoint's size); else past this many journal bytes. */
    private final long checkpointEvery;
    private Journal journal;
    private long generation;
    private long checkpointBytes;
    private volatile boolean closed;
    /** Names the replica and tasks whose threads write here, for problem lines ({@link StoreOptions#owner}). */
    private final Supplier<String> owner;
    /** The change feed and indexes; null when the options declare none, so that puts do nothing more. */
    private final FeedIndexes derived;

    private MapDbVersionStore(Path file, StoreFileLock lock, StoreOptions options, OpenOutcome outcome, long checkpointEvery) {
        this.file = file;
        this.files = new StoreFiles(file);
        this.lock = lock;
        this.log = new ChangeLog();
        this.mem = new MemoryStore(file, options.schemaCacheSize(), log);
        this.owner = options.owner();
        this.outcome = outcome;
        this.checkpointEvery = checkpointEvery;
        this.derived = options.derivesAnything() ? new FeedIndexes(file, mem, options) : null;
    }

    /**
     * Opens the store at {@code file}, creating it if absent and rebuilding it (empty) if it is damaged.
     *
     * @throws StoreLockedException when another store instance, in this or another process, has it open
     */
    public static MapDbVersionStore open(Path file, StoreOptions options) {
        return open(file, options, 0);
    }

    /**
     * As {@link #open(Path, StoreOptions)}, but checkpointing whenever the journal passes
     * {@code checkpointEvery} bytes, however large the last checkpoint: tests use it to force frequent
     * checkpoints. The production rule is {@code checkpointEvery = 0}.
     */
    static MapDbVersionStore open(Path file, StoreOptions options, long checkpointEvery) {
        Path abs = file.toAbsolutePath();
        StoreFileLock lock = StoreFileLock.acquire(abs);
        try {
            MapDbVersionStore store = openLocked(abs, lock, options, checkpointEvery);
            LOG.info("Version store {} open: {} ({})", abs.getFileName(), store.outcome.kind(), store.outcome.reason());
            return store;
        } catch (RuntimeException | Error e) {
            lock.close();
            throw e;
        }
    }

    private static MapDbVersionStore openLocked(Path file, StoreFileLock lock, StoreOptions options, long checkpointEvery) {
        if (!Files.exists(file)) {
            if (StoreFiles.dataFiles(file).isEmpty()) {
                return createFresh(file, lock, options, OpenOutcome.created(), checkpointEvery);
            }
            return rebuild(file, lock, options, "store files without their manifest " + file.getFileName(), checkpointEvery);
        }
        Optional<String> damage = Quarantine.damageReason(file);
        if (damage.isPresent()) {
            return rebuild(file, lock, options, "marked damaged when it was last used: " + damage.get(), checkpointEvery);
        }
        MapDbVersionStore store = new MapDbVersionStore(file, lock, options, OpenOutcome.reopened(), checkpointEvery);
        try {
            store.load();
            return store;
        } catch (Throwable e) {
            store.closeJournal();
            if (e instanceof VirtualMachineError && !(e instanceof OutOfMemoryError) && !(e instanceof StackOverflowError)) {
                throw (VirtualMachineError) e;
            }
            String reason = e instanceof StoreCorruptedException c ? c.what() : "the store could not be read: " + e;
            return rebuild(file, lock, options, reason, checkpointEvery);
        }
    }

    private void load() throws IOException {
        generation = Manifest.read(file, FORMAT);
        Path checkpoint = files.checkpoint(generation);
        Checkpoint.load(checkpoint, FORMAT, generation, mem);
        checkpointBytes = Files.size(checkpoint);
        Path journalFile = files.journal(generation);
        if (!Files.isRegularFile(journalFile)) {
            throw new StoreCorruptedException(file, "the manifest names journal " + journalFile.getFileName() + ", which does not exist");
        }
        journal = Journal.replay(journalFile, FORMAT, generation, payload -> ChangeLog.replay(file, payload, mem));
        if (derived != null) {
            derived.rebuild();
        }
        files.deleteOtherGenerations(generation);
    }

    private static MapDbVersionStore rebuild(Path file, StoreFileLock lock, StoreOptions options, String reason, long checkpointEvery) {
        Path aside = Quarantine.moveAside(file);
        // The replica reports the problem (naming its tasks and what to do); this line says where the file went.
        LOG.info("{}: version store {} is unusable and was moved aside to {}; starting an empty store. Reason: {}",
                options.owner().get(), file.getFileName(), aside.getFileName(), reason);
        return createFresh(file, lock, options, OpenOutcome.rebuilt(reason, aside), checkpointEvery);
    }

    private static MapDbVersionStore createFresh(Path file, StoreFileLock lock, StoreOptions options, OpenOutcome outcome, long checkpointEvery) {
        MapDbVersionStore store = new MapDbVersionStore(file, lock, options, outcome, checkpointEvery);
        try {
            store.switchGeneration(1);
            return store;
        } catch (IOException e) {
            store.closeJournal();
            throw new UncheckedIOException("cannot create the version store " + file.getFileName() + "; check its directory is writable", e);
        }
    }

    /**
     * Writes the committed content as checkpoint {@code next} with an empty journal, names them in the
     * manifest, and only then deletes the previous generation. Called with no pending writes.
     */
    private void switchGeneration(long next) throws IOException {
        long bytes = Checkpoint.write(files, FORMAT, next, mem);
        Files.deleteIfExists(files.journal(next));
        Journal fresh = Journal.create(files.journal(next), FORMAT, next);
        try {
            Manifest.write(files, FORMAT, next);
        } catch (IOException | RuntimeException e) {
            fresh.close();
            throw e;
        }
        closeJournal();
        journal = fresh;
        generation = next;
        checkpointBytes = bytes;
        files.deleteOtherGenerations(next);
    }

    private void closeJournal() {
        if (journal != null) {
            journal.close();
        }
    }

    /** Marks the store damaged (the next open quarantines and rebuilds it) and says so. */
    private StoreCorruptedException damaged(StoreCorruptedException e) {
        Quarantine.markDamaged(file, e.what());
        return e;
    }

    @Override
    public void put(String table, RowKey key, Version version) {
        byte[] rowKey = key.encoded();
        SourcePosition p = version.position();
        int id = mem.tables.idOrAssign(table);
        byte[] body = mem.codec.encode(version);
        if (derived != null) {
            try {
                derived.onPut(table, id, key, rowKey, version);
            } catch (StoreCorruptedException e) {
                throw damaged(e);
            }
        }
        mem.put(id, rowKey, version.validFrom(), p.lsn(), p.ordinal(), body);
        log.put(id, rowKey, version.validFrom(), p.lsn(), p.ordinal(), body);
    }

    /**
     * Reads of a closed store fail, as they did when reads went to MapDB's closed volume: the replica
     * retires a store by closing it (the replica's GuardedLookup turns this into a retriable error), and a reader
     * must not go on answering from a store whose writer stopped.
     */
    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("version store " + file.getFileName() + " is closed");
        }
    }

    private byte[] row(String table, RowKey key) {
        checkOpen();
        int id = mem.tables.id(table);
        return id == 0 ? null : mem.rows.get(id, key);
    }

    private Version decode(String table, byte[] row, int i) {
        try {
            return mem.codec.decode(table, row, i);
        } catch (StoreCorruptedException e) {
            throw damaged(e);
        }
    }

    @Override
    public Optional<Version> floor(String table, RowKey key, long timestamp) {
        byte[] row = row(table, key);
        if (row == null) {
            return Optional.empty();
        }
        int i = PackedRow.floor(row, timestamp);
        return i < 0 ? Optional.empty() : Optional.of(decode(table, row, i));
    }

    @Override
    public Optional<Version> latest(String table, RowKey key) {
        byte[] row = row(table, key);
        return row == null ? Optional.empty() : Optional.of(decode(table, row, PackedRow.count(row) - 1));
    }

    @Override
    public Optional<Version> find(String table, RowKey key, VersionId id) {
        byte[] row = row(table, key);
        if (row == null) {
            return Optional.empty();
        }
        int i = PackedRow.indexOf(row, id.validFrom(), id.position().lsn(), id.position().ordinal());
        return i < 0 ? Optional.empty() : Optional.of(decode(table, row, i));
    }

    @Override
    public List<Version> history(String table, RowKey key) {
        byte[] row = row(table, key);
        if (row == null) {
            return List.of();
        }
        int n = PackedRow.count(row);
        List<Version> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(decode(table, row, i));
        }
        return out;
    }

    /** The table's keys as of this call, in key order (sorted per call: keys() serves rebuilds and tests, not lookups). */
    @Override
    public Iterable<RowKey> keys(String table) {
        checkOpen();
        return () -> {
            checkOpen();
            int id = mem.tables.id(table);
            List<byte[]> sorted = id == 0 ? List.of() : mem.rows.rowsInKeyOrder(id);
            return sorted.stream().map(row -> RowKey.decode(PackedRow.key(row))).iterator();
        };
    }

    @Override
    public void putOffset(ByteBuffer key, ByteBuffer value) {
        byte[] k = bytes(key);
        byte[] v = bytes(value);
        mem.meta.putOffset(k, v);
        log.offset(k, v);
    }

    private static byte[] bytes(ByteBuffer b) {
        ByteBuffer d = b.duplicate();
        byte[] out = new byte[d.remaining()];
        d.get(out);
        return out;
    }

    @Override
    public Map<ByteBuffer, ByteBuffer> offsets() {
        checkOpen();
        return mem.meta.offsets();
    }

    @Override
    public void setWatermark(long watermark) {
        mem.meta.setWatermark(watermark);
        log.watermark(watermark);
    }

    @Override
    public long watermark() {
        return mem.meta.watermark();
    }

    @Override
    public void setMeta(String key, String value) {
        if (key.startsWith(RESERVED_PREFIX)) {
            throw new IllegalArgumentException("meta key '" + key + "' is reserved: keys starting with '" + RESERVED_PREFIX
                    + "' belong to the store itself; use another prefix");
        }
        mem.meta.setMeta(key, value);
        log.meta(key, value);
    }

    @Override
    public Optional<String> meta(String key) {
        checkOpen();
        return mem.meta.meta(key);
    }

    @Override
    public long prune(long horizon) {
        // Raised before anything is removed: a concurrent as-of read of a time being pruned then reports
        // OutOfHistory (StoreBackedLookup re-reads the start after its floor) instead of a half-pruned row.
        if (horizon > mem.meta.historyStart()) {
            setHistoryStart(horizon);
        }
        log.prune(horizon);
        long removed = mem.prune(horizon);
        if (derived != null) {
            derived.onPrune(removed);
        }
        return removed;
    }

    @Override
    public long historyStart() {
        return mem.meta.historyStart();
    }

    @Override
    public void setHistoryStart(long historyStart) {
        mem.meta.setHistoryStart(historyStart);
        log.historyStart(historyStart);
    }

    @Override
    public void commit() {
        if (!log.isEmpty()) {
            log.appendTo(journal);
        }
        log.clear();
        mem.onCommit();
        if (derived != null) {
            try {
                derived.onCommit();
            } catch (StoreCorruptedException e) {
                // The commit is durable; the versions it rebuilt from do not decode: the next open rebuilds the store.
                throw damaged(e);
            }
        }
        // Rewriting the base only once the journal is as large as it keeps the cost of checkpoints at ~2x the data written.
        long threshold = checkpointEvery > 0 ? checkpointEvery : Math.max(MIN_CHECKPOINT_BYTES, checkpointBytes);
        if (journal.size() > threshold) {
            checkpoint();
        }
    }

    private void checkpoint() {
        try {
            switchGeneration(generation + 1);
        } catch (IOException e) {
            // The commit itself is durable in the journal; a failed checkpoint only leaves the journal longer.
            LOG.warn("{}: checkpoint {} of version store {} failed, the journal keeps growing until one succeeds: {}."
                    + " Check free disk space and write permission in {}", owner.get(), generation + 1, file.getFileName(),
                    e.toString(), file.toAbsolutePath().getParent());
        }
    }

    @Override
    public void rollback() {
        log.clear();
        mem.onRollback();
        if (derived != null) {
            derived.onRollback();
        }
    }

    @Override
    public List<Change> changesAfter(Change after, long upTo, int limit) {
        checkOpen();
        if (derived == null) {
            if (after == null || limit < 0) {
                throw new IllegalArgumentException("changesAfter needs a change to start after (Change.START) and a limit >= 0");
            }
            return List.of();
        }
        return derived.changesAfter(after, upTo, limit);
    }

    /**
     * The version of the row just before {@code at}: one binary search over the packed row's header, and only
     * the version returned is decoded. Like {@link #floor}, it reads the rows as they are, the writer's uncommitted
     * puts included (a replay puts them again at the same positions).
     */
    @Override
    public Optional<Version> before(String table, RowKey key, Change at) {
        byte[] row = row(table, key);
        if (row == null) {
            return Optional.empty();
        }
        VersionId id = at.id();
        int i = PackedRow.indexOf(row, id.validFrom(), id.position().lsn(), id.position().ordinal());
        int last;
        if (i >= 0) {
            // This row's version shares at's id (a snapshot): table and key decide, as in Change's order.
            last = new Change(id, table, key).compareTo(at) < 0 ? i : i - 1;
        } else {
            last = -i - 2;
        }
        return last < 0 ? Optional.empty() : Optional.of(decode(table, row, last));
    }

    @Override
    public List<RowKey> indexed(String table, List<String> columns, RowKey value, RowKey afterKey, int limit) {
        checkOpen();
        if (derived == null) {
            throw FeedIndexes.noSuchIndex(List.of(), table, columns);
        }
        return derived.indexed(table, columns, value, afterKey, limit);
    }

    @Override
    public Footprint footprint() {
        long bytes = 0;
        for (Path p : List.of(file, files.checkpoint(generation), files.journal(generation))) {
            try {
                bytes += Files.size(p);
            } catch (IOException | RuntimeException e) {
                // Between a checkpoint's rename and the old generation's deletion, or closed: the next read is right.
            }
        }
        return new Footprint(mem.rows.versions(), mem.rows.keys(), bytes);
    }

    @Override
    public OpenOutcome openOutcome() {
        return outcome;
    }

    /** How many distinct row schemas the store holds. */
    public int schemaCount() {
        return mem.schemas.count();
    }

    /** The store file (its manifest). */
    public Path file() {
        return file;
    }

    /**
     * Discards writes since the last commit, compacts the journal into a checkpoint if it holds any
     * commit (so the next open only loads), closes the files and releases the lock. Idempotent.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            // Close means "stop", never "commit": what was not committed is dropped, as after a crash.
            rollback();
            if (journal.hasRecords() && Quarantine.damageReason(file).isEmpty()) {
                checkpoint();
            }
        } finally {
            closeJournal();
            lock.close();
        }
    }
}
