package io.asofconnect.store;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The small state kept beside the rows: the caller's metadata, the engine's offsets, the watermark and
 * the history start. Writes are visible at once (except the watermark, whose readers see the committed
 * value only); the first change of each entry since the last commit remembers its committed value for
 * a rollback.
 */
final class StoreMeta {
    private static final Object ABSENT = new Object();

    private final Map<String, String> meta = new ConcurrentHashMap<>();
    private final Map<ByteBuffer, byte[]> offsets = new ConcurrentHashMap<>();
    private final Map<String, Object> metaUndo = new HashMap<>();
    private final Map<ByteBuffer, Object> offsetUndo = new HashMap<>();
    private volatile long committedWatermark = Long.MIN_VALUE;
    private long pendingWatermark = Long.MIN_VALUE;
    private volatile long historyStart = Long.MIN_VALUE;
    private long committedHistoryStart = Long.MIN_VALUE;

    Optional<String> meta(String key) {
        return Optional.ofNullable(meta.get(key));
    }

    void setMeta(String key, String value) {
        String previous = value == null ? meta.remove(key) : meta.put(key, value);
        metaUndo.putIfAbsent(key, previous == null ? ABSENT : previous);
    }

    void putOffset(byte[] key, byte[] value) {
        ByteBuffer k = ByteBuffer.wrap(key);
        byte[] previous = offsets.put(k, value);
        offsetUndo.putIfAbsent(k, previous == null ? ABSENT : previous);
    }

    Map<ByteBuffer, ByteBuffer> offsets() {
        Map<ByteBuffer, ByteBuffer> out = new LinkedHashMap<>();
        for (Map.Entry<ByteBuffer, byte[]> e : offsets.entrySet()) {
            out.put(e.getKey().duplicate(), ByteBuffer.wrap(e.getValue()));
        }
        return out;
    }

    Map<String, String> allMeta() {
        return meta;
    }

    Map<ByteBuffer, byte[]> allOffsets() {
        return offsets;
    }

    void setWatermark(long w) {
        pendingWatermark = w;
    }

    long watermark() {
        return committedWatermark;
    }

    long pendingWatermark() {
        return pendingWatermark;
    }

    void setHistoryStart(long h) {
        historyStart = h;
    }

    long historyStart() {
        return historyStart;
    }

    /** Sets every value as committed (checkpoint load). */
    void restore(long watermark, long start) {
        committedWatermark = watermark;
        pendingWatermark = watermark;
        historyStart = start;
        committedHistoryStart = start;
    }

    void onCommit() {
        metaUndo.clear();
        offsetUndo.clear();
        committedWatermark = pendingWatermark;
        committedHistoryStart = historyStart;
    }

    void onRollback() {
        metaUndo.forEach((k, v) -> {
            if (v == ABSENT) {
                meta.remove(k);
            } else {
                meta.put(k, (String) v);
            }
        });
        offsetUndo.forEach((k, v) -> {
            if (v == ABSENT) {
                offsets.remove(k);
            } else {
                offsets.put(k, (byte[]) v);
            }
        });
        metaUndo.clear();
        offsetUndo.clear();
        pendingWatermark = committedWatermark;
        historyStart = committedHistoryStart;
    }
}
