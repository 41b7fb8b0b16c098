package io.asofconnect.windowjoin;

import io.asofconnect.windowjoin.state.HeldRecord;
import io.asofconnect.windowjoin.state.Side;
import io.asofconnect.windowjoin.state.WindowStore;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.sink.SinkRecord;

import java.util.List;

/**
 * The join itself, one record at a time: a record is held until its window closes, matched against the other side's
 * held records with the same key as it arrives, and, when the other side's watermark passes its window end, written
 * as unmatched if it never matched (outer sides) and forgotten.
 *
 * <p>Rebuild: records below a partition's {@link SideState#replayNext} were consumed by a committed flush. They go
 * into the state again and match again, but the rows they produce that the target already holds are not written:
 * a match of two such records, and the unmatched row of a record whose window had closed by the committed watermark.
 * Every other row is new. Windows stay open until both partitions of a pair have caught up.
 */
final class Joiner {
    /** What became of a record. */
    enum Outcome { HELD, LATE, LATE_BEFORE }

    private static final byte[] NO_KEY = new byte[0];

    private final WindowStore store;
    private final JoinWindow window;
    private final JoinType type;
    private final OutputRows rows;

    Joiner(WindowStore store, JoinWindow window, JoinType type, OutputRows rows) {
        this.store = store;
        this.window = window;
        this.type = type;
        this.rows = rows;
    }

    /**
     * Takes a record of {@code side} into {@code pair}. {@code key} is null when the record has no join key: it
     * matches nothing, and is written unmatched on an outer side when its window closes (as Kafka Streams does
     * since KIP-962). A record behind its partition's watermark is refused ({@link Outcome#LATE}) and changes
     * nothing; one the first run refused is refused again on replay ({@link Outcome#LATE_BEFORE}).
     */
    Outcome add(PairState pair, Side side, long offset, byte[] key, long time, Struct value) {
        SideState s = pair.side(side);
        if (s.isReplay(offset)) {
            if (s.lateBefore.contains(offset)) {
                return Outcome.LATE_BEFORE;
            }
        } else {
            if (time < s.watermark) {
                return Outcome.LATE;
            }
            s.watermark = Math.max(s.watermark, window.watermarkAfter(time));
        }
        s.maxTime = Math.max(s.maxTime, time);
        HeldRecord rec = new HeldRecord(pair.partition, side, key == null ? NO_KEY : key, time, offset, value, false,
                HeldRecord.NO_PARTNER);
        if (key != null) {
            rec = matchAgainstHeld(pair, rec);
        }
        if (rec.matched()) {
            pair.side(side.other()).pin(rec.minPartner());
        }
        s.pin(offset);
        store.put(rec, window.windowEnd(side, time));
        return Outcome.HELD;
    }

    private HeldRecord matchAgainstHeld(PairState pair, HeldRecord rec) {
        Side side = rec.side();
        long[] range = window.partnerRange(side, rec.time());
        List<HeldRecord> partners = store.probe(pair.partition, side.other(), rec.key(), range[0], range[1]);
        for (HeldRecord partner : partners) {
            HeldRecord l = side == Side.LEFT ? rec : partner;
            HeldRecord r = side == Side.LEFT ? partner : rec;
            if (!(pair.left.isReplay(l.offset()) && pair.right.isReplay(r.offset()))) {
                emit(pair, rows.matched(pair.partition, l, r));
            }
            if (partner.minPartner() == HeldRecord.NO_PARTNER) {
                pair.side(side).pin(rec.offset());
            }
            store.update(partner.matchedWith(rec.offset()));
            rec = rec.matchedWith(partner.offset());
        }
        return rec;
    }

    /**
     * Closes every window of {@code pair} that the other side's watermark has passed: unmatched records of outer
     * sides become rows, and all of them leave the state. Nothing closes while the pair replays.
     */
    void closeWindows(PairState pair) {
        if (!pair.live()) {
            return;
        }
        for (Side side : Side.values()) {
            SideState own = pair.side(side);
            SideState other = pair.side(side.other());
            store.closeWindows(pair.partition, side, other.watermark, rec -> {
                if (!rec.matched() && type.keepsUnmatched(side) && !writtenBefore(own, other, rec)) {
                    emit(pair, rows.unmatched(pair.partition, rec));
                }
                own.unpin(rec.offset());
                if (rec.minPartner() != HeldRecord.NO_PARTNER) {
                    other.unpin(rec.minPartner());
                }
            });
        }
    }

    /** The first run had closed this record's window before its last commit, and wrote whatever it had to. */
    private boolean writtenBefore(SideState own, SideState other, HeldRecord rec) {
        return own.isReplay(rec.offset()) && window.windowEnd(rec.side(), rec.time()) < other.committedWatermark;
    }

    private static void emit(PairState pair, SinkRecord row) {
        pair.left.writer.emit(row);
    }
}
