package io.asofconnect.store;

import io.asofconnect.common.lookup.RowKey;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * One table's rows: an open-addressing hash table (linear probing) of keyed rows ({@link PackedRow#key}),
 * for one writer and any number of lock-free readers.
 *
 * <p>Why not a {@code ConcurrentHashMap}: at a million rows every hop of a lookup is a cache miss, and a
 * map entry costs four (bucket, node, key wrapper, key bytes) before the row itself. Here a slot holds the
 * row array, which starts with its own key, and the hash of that key beside it, so a lookup touches the
 * slot, its hash and the one row whose hash matches.
 *
 * <p>Publication: slots are written with release and read with acquire semantics, and rows are never
 * modified once published, so a reader sees a whole row or the previous one. A removed row leaves
 * {@link #REMOVED} behind, so that probe chains stay unbroken for readers; growing rehashes into a new
 * array, published through a volatile field once complete. A reader still holding the old array reads
 * the table as it was when it started.
 */
final class RowTable {
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(byte[][].class);
    /** Left in a slot whose row was removed: not a row, and not the end of a probe chain. */
    private static final byte[] REMOVED = new byte[0];
    private static final int MIN_CAPACITY = 16;

    /**
     * The slots and, beside each, the hash of its row's key ({@link RowKey#hashOfEncoded}): a probe compares
     * the int before it follows the slot to the row, so the rows of other keys on a probe chain (a cache
     * miss each at a million rows) are never read. A slot's hash is written before its row is published,
     * and replaced rows keep their key, so a reader that sees a row sees its hash. Published together, so
     * a reader never pairs the rows of one array with the hashes of another.
     */
    private record Slots(byte[][] rows, int[] hashes) {
        Slots(int capacity) {
            this(new byte[capacity][], new int[capacity]);
        }
    }

    private volatile Slots slots;
    /** Writer only: live rows, and slots holding REMOVED. */
    private int size;
    private int removed;

    RowTable(int expectedRows) {
        slots = new Slots(capacityFor(expectedRows));
    }

    /** A power of two at least twice {@code rows}: probe chains stay short at a load factor of at most one half. */
    private static int capacityFor(int rows) {
        long wanted = Math.max(MIN_CAPACITY, 2L * rows);
        if (wanted > 1 << 30) {
            throw new IllegalStateException("a table of " + rows + " rows does not fit one row table");
        }
        return Integer.highestOneBit((int) wanted - 1) << 1;
    }

    private static int indexFor(int hash, int mask) {
        return hash & mask;
    }

    /** The row with this key, or null. Any thread. */
    byte[] get(RowKey key) {
        Slots t = slots;
        byte[][] s = t.rows;
        int[] hashes = t.hashes;
        int hash = key.encodedHash();
        int mask = s.length - 1;
        for (int i = indexFor(hash, mask); ; i = (i + 1) & mask) {
            byte[] row = (byte[]) SLOT.getAcquire(s, i);
            if (row == null) {
                return null;
            }
            if (hashes[i] == hash && row != REMOVED && key.encodedEquals(row, PackedRow.KEY_AT, PackedRow.keyEnd(row))) {
                return row;
            }
        }
    }

    /** The row with the key {@code key[from, to)}, or null. Any thread. */
    byte[] get(byte[] key, int from, int to) {
        return get(key, from, to, RowKey.hashOfEncoded(key, from, to));
    }

    /** As {@link #get(byte[], int, int)}, with the key's {@link RowKey#hashOfEncoded} already computed. Any thread. */
    byte[] get(byte[] key, int from, int to, int hash) {
        Slots t = slots;
        int i = find(t, key, from, to, hash);
        if (i < 0) {
            return null;
        }
        byte[] row = (byte[]) SLOT.getAcquire(t.rows, i);
        return row == REMOVED ? null : row;
    }

    /** The slot holding this key in {@code t}, or -1. */
    private static int find(Slots t, byte[] key, int from, int to, int hash) {
        byte[][] s = t.rows;
        int[] hashes = t.hashes;
        int mask = s.length - 1;
        for (int i = indexFor(hash, mask); ; i = (i + 1) & mask) {
            byte[] row = (byte[]) SLOT.getAcquire(s, i);
            if (row == null) {
                return -1;
            }
            if (hashes[i] == hash && row != REMOVED && Arrays.equals(row, PackedRow.KEY_AT, PackedRow.keyEnd(row), key, from, to)) {
                return i;
            }
        }
    }

    /** Publishes {@code row} under the key it carries, replacing the row with that key; returns the replaced row or null. Writer only. */
    byte[] put(byte[] row) {
        return put(row, RowKey.hashOfEncoded(row, PackedRow.KEY_AT, PackedRow.keyEnd(row)));
    }

    /** As {@link #put(byte[])}, with the hash of the row's key already computed. Writer only. */
    byte[] put(byte[] row, int hash) {
        int keyEnd = PackedRow.keyEnd(row);
        Slots t = slots;
        int at = find(t, row, PackedRow.KEY_AT, keyEnd, hash);
        if (at >= 0) {
            byte[] previous = t.rows[at];
            SLOT.setRelease(t.rows, at, row);
            return previous;
        }
        if (2L * (size + removed + 1) > t.rows.length) {
            t = grow(size + 1);
        }
        byte[][] s = t.rows;
        int mask = s.length - 1;
        int i = indexFor(hash, mask);
        // The key is absent, so the first free slot of its chain takes it (a REMOVED one is reused).
        while (s[i] != null && s[i] != REMOVED) {
            i = (i + 1) & mask;
        }
        if (s[i] == REMOVED) {
            removed--;
        }
        // The hash first: the release below publishes it with the row.
        t.hashes[i] = hash;
        SLOT.setRelease(s, i, row);
        size++;
        return null;
    }

    /** Removes the row with the key {@code key[from, to)}; returns it, or null if there was none. Writer only. */
    byte[] remove(byte[] key, int from, int to) {
        Slots t = slots;
        int at = find(t, key, from, to, RowKey.hashOfEncoded(key, from, to));
        if (at < 0) {
            return null;
        }
        byte[] previous = t.rows[at];
        SLOT.setRelease(t.rows, at, REMOVED);
        size--;
        removed++;
        return previous;
    }

    /** Rehashes the live rows into a table sized for {@code rows}, dropping REMOVED markers, and publishes it. */
    private Slots grow(int rows) {
        Slots old = slots;
        Slots next = new Slots(Math.max(old.rows.length, capacityFor(rows)));
        int mask = next.rows.length - 1;
        for (int j = 0; j < old.rows.length; j++) {
            byte[] row = old.rows[j];
            if (row != null && row != REMOVED) {
                int hash = old.hashes[j];
                int i = indexFor(hash, mask);
                while (next.rows[i] != null) {
                    i = (i + 1) & mask;
                }
                next.rows[i] = row;
                next.hashes[i] = hash;
            }
        }
        removed = 0;
        slots = next;
        return next;
    }

    int size() {
        return size;
    }

    /**
     * Every row, in slot order, from the array published when the walk starts. The writer may replace or
     * remove the row it is given (prune does); rows it puts under new keys may or may not be visited.
     */
    void forEach(Consumer<byte[]> action) {
        byte[][] s = slots.rows;
        for (int i = 0; i < s.length; i++) {
            byte[] row = (byte[]) SLOT.getAcquire(s, i);
            if (row != null && row != REMOVED) {
                action.accept(row);
            }
        }
    }
}
