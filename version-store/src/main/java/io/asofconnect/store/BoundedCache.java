package io.asofconnect.store;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * A concurrent cache that never holds more than {@code capacity} entries: when full it is cleared and
 * refills with what is in use. Crude, but lock-free for readers, and the working set (the schemas of a
 * few tables) is far below any sensible capacity, so clearing is an exception, not a pattern.
 */
final class BoundedCache<K, V> {
    private final ConcurrentHashMap<K, V> map = new ConcurrentHashMap<>();
    private final int capacity;

    BoundedCache(int capacity) {
        this.capacity = capacity;
    }

    V get(K key) {
        return map.get(key);
    }

    V computeIfAbsent(K key, Function<K, V> load) {
        V v = map.get(key);
        if (v != null) {
            return v;
        }
        v = load.apply(key);
        if (map.size() >= capacity) {
            map.clear();
        }
        map.put(key, v);
        return v;
    }

    void clear() {
        map.clear();
    }

    int size() {
        return map.size();
    }
}
