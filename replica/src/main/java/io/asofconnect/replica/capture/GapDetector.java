package io.asofconnect.replica.capture;

import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.replica.config.ReplicaConfig;
import io.asofconnect.store.VersionStore;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.Optional;

/**
 * Decides whether a stored history can be continued from the slot without missing a change. The store's
 * offsets were committed before the engine flushed them to the server, so a slot whose confirmed position
 * lies beyond them, a missing slot, lost WAL or another server all mean changes were skipped.
 */
public final class GapDetector {
    public static final String META_SYSTEM_ID = "source.system_identifier";
    public static final String META_SLOT = "source.slot.name";

    private GapDetector() {
    }

    /** Why continuing would leave a gap, or empty when it would not. */
    public static Optional<String> detect(ReplicaConfig config, VersionStore store, OffsetCodec codec, StartupChecks.SourceState state) {
        Map<ByteBuffer, ByteBuffer> offsets = store.offsets();
        if (offsets.isEmpty()) {
            return Optional.empty();
        }
        Optional<String> storedSystem = store.meta(META_SYSTEM_ID);
        if (storedSystem.isPresent() && state.systemIdentifier().isPresent() && !storedSystem.get().equals(state.systemIdentifier().get())) {
            return Optional.of("the source server's system identifier changed (the store was built from a different or"
                    + " re-initialised server)");
        }
        Optional<String> storedSlot = store.meta(META_SLOT);
        if (storedSlot.isPresent() && !storedSlot.get().equals(config.slotName())) {
            return Optional.of("the store was built from slot " + storedSlot.get() + ", not " + config.slotName());
        }
        if (state.slot().isEmpty()) {
            return Optional.of("replication slot " + config.slotName() + " no longer exists (it was dropped, perhaps while the"
                    + " replica was stopped); the changes since the store's last commit are gone");
        }
        StartupChecks.SlotState slot = state.slot().get();
        if ("lost".equals(slot.walStatus())) {
            return Optional.of("the server removed WAL that replication slot " + config.slotName() + " still needed (wal_status = lost;"
                    + " see max_slot_wal_keep_size)");
        }
        long stored = storedLsn(codec, offsets);
        if (slot.confirmedFlushLsn() != null && stored != Long.MIN_VALUE && slot.confirmedFlushLsn() > stored) {
            return Optional.of("replication slot " + config.slotName() + " has confirmed position "
                    + new SourcePosition(slot.confirmedFlushLsn(), 0) + ", past the store's committed position "
                    + new SourcePosition(stored, 0) + " (the slot was recreated or advanced by another reader)");
        }
        return Optional.empty();
    }

    /** The greatest LSN in the stored offsets, or {@link Long#MIN_VALUE}. */
    static long storedLsn(OffsetCodec codec, Map<ByteBuffer, ByteBuffer> offsets) {
        long max = Long.MIN_VALUE;
        for (ByteBuffer v : offsets.values()) {
            Map<?, ?> m = codec.decodeValue(v);
            if (m == null) {
                continue;
            }
            for (String k : new String[] {"lsn", "lsn_commit", "lsn_proc"}) {
                if (m.get(k) instanceof Number n) {
                    max = Math.max(max, n.longValue());
                }
            }
        }
        return max;
    }

    /**
     * Whether the stored offsets stop inside the initial snapshot. The connector then takes the snapshot
     * again, later, and resumes streaming after it, so the rows it reads speak for that later time only.
     */
    public static boolean snapshotIncomplete(OffsetCodec codec, VersionStore store) {
        for (ByteBuffer v : store.offsets().values()) {
            Map<?, ?> m = codec.decodeValue(v);
            if (m == null) {
                continue;
            }
            Object snapshot = m.get("snapshot");
            boolean inSnapshot = snapshot != null && !Boolean.FALSE.equals(snapshot) && !"false".equalsIgnoreCase(snapshot.toString());
            if (inSnapshot && !Boolean.TRUE.equals(m.get("last_snapshot_record"))) {
                return true;
            }
        }
        return false;
    }

    /** The gap message for {@code replica.on.gap=FAIL}. */
    public static String failMessage(ReplicaConfig config, String reason) {
        return "replica '" + config.name() + "' cannot continue its stored history without missing changes: " + reason
                + ". Set " + ReplicaConfig.ON_GAP + "=REBUILD to quarantine the store file and take a new snapshot (lookups"
                + " before the rebuild then answer OutOfHistory), or restore the slot and WAL.";
    }
}
