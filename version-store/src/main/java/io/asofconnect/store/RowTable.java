package io.asofconnect.store;

import io.asofconnect.lookup.RowKey;

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
 * row array, which starts with its own key, so a lookup touches the slot and the row.
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

    private volatile byte[][] slots;
    /** Writer only: live rows, and slots holding REMOVED. */
    private int size;
    private int removed;

    RowTable(int expectedRows) {
        slots = new byte[capacityFor(expectedRows)][];
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
        byte[][] s = slots;
        int mask = s.length - 1;
        for (int i = indexFor(key.encodedHash(), mask); ; i = (i + 1) & mask) {
            byte[] row = (byte[]) SLOT.getAcquire(s, i);
            if (row == null) {
                return null;
            }
            if (row != REMOVED && key.encodedEquals(row, PackedRow.KEY_AT, PackedRow.keyEnd(row))) {
                return row;
            }
        }
    }

    /** The row with the key {@code key[from, to)}, or null. Any thread. */
    byte[] get(byte[] key, int from, int to) {
        byte[][] s = slots;
        int i = find(s, key, from, to, RowKey.hashOfEncoded(key, from, to));
        if (i < 0) {
            return null;
        }
        byte[] row = (byte[]) SLOT.getAcquire(s, i);
        return row == REMOVED ? null : row;
    }

    /** The slot holding this key in {@code s}, or -1. */
    private static int find(byte[][] s, byte[] key, int from, int to, int hash) {
        int mask = s.length - 1;
        for (int i = indexFor(hash, mask); ; i = (i + 1) & mask) {
            byte[] row = (byte[]) SLOT.getAcquire(s, i);
            if (row == null) {
                return -1;
            }
            if (row != REMOVED && Arrays.equals(row, PackedRow.KEY_AT, PackedRow.keyEnd(row), key, from, to)) {
                return i;
            }
        }
    }

    /** Publishes {@code row} under the key it carries, replacing the row with that key; returns the replaced row or null. Writer only. */
    byte[] put(byte[] row) {
        int keyEnd = PackedRow.keyEnd(row);
        int hash = RowKey.hashOfEncoded(row, PackedRow.KEY_AT, keyEnd);
        byte[][] s = slots;
        int at = find(s, row, PackedRow.KEY_AT, keyEnd, hash);
        if (at >= 0) {
            byte[] previous = s[at];
            SLOT.setRelease(s, at, row);
            return previous;
        }
        if (2L * (size + removed + 1) > s.length) {
            s = grow(size + 1);
        }
        int mask = s.length - 1;
        int i = indexFor(hash, mask);
        // The key is absent, so the first free slot of its chain takes it (a REMOVED one is reused).
        while (s[i] != null && s[i] != REMOVED) {
            i = (i + 1) & mask;
        }
        if (s[i] == REMOVED) {
            removed--;
        }
        SLOT.setRelease(s, i, row);
        size++;
        return null;
    }

    /** Removes the row with the key {@code key[from, to)}; returns it, or null if there was none. Writer only. */
    byte[] remove(byte[] key, int from, int to) {
        byte[][] s = slots;
        int at = find(s, key, from, to, RowKey.hashOfEncoded(key, from, to));
        if (at < 0) {
            return null;
        }
        byte[] previous = s[at];
        SLOT.setRelease(s, at, REMOVED);
        size--;
        removed++;
        return previous;
    }

    /** Rehashes the live rows into a table sized for {@code rows}, dropping REMOVED markers, and publishes it. */
    private byte[][] grow(int rows) {
        byte[][] old = slots;
        byte[][] next = new byte[Math.max(old.length, capacityFor(rows))][];
        int mask = next.length - 1;
        for (byte[] row : old) {
            if (row != null && row != REMOVED) {
                int i = indexFor(RowKey.hashOfEncoded(row, PackedRow.KEY_AT, PackedRow.keyEnd(row)), mask);
                while (next[i] != null) {
                    i = (i + 1) & mask;
                }
                next[i] = row;
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
        byte[][] s = slots;
        for (int i = 0; i < s.length; i++) {
            byte[] row = (byte[]) SLOT.getAcquire(s, i);
            if (row != null && row != REMOVED) {
                action.accept(row);
            }
        }
    }
}
