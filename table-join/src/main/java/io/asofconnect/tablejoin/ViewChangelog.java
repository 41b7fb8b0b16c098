package io.asofconnect.tablejoin;

import io.asofconnect.common.lookup.Change;
import io.asofconnect.common.lookup.ChangeFeed;
import io.asofconnect.common.lookup.Version;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;

import org.apache.kafka.connect.errors.ConnectException;

/**
 * The view's changelog as records: the feed's changes in order, each expanded by the delta rule and encoded, each
 * record with the offset that names it. Resumed after an offset, it hands out exactly the records that followed it:
 * the change is expanded again from the offset's candidate, and that candidate's records up to the offset's are
 * skipped (a change's expansion is the same every time: the feed behind the watermark never changes).
 *
 * <p>Each record also says whether it ends its <em>group</em>: the changes sharing one valid-from (one commit-time
 * millisecond: one or more whole source transactions), so that a sink can apply a group in one target transaction.
 * A group is complete when read, since the feed holds every change valid at or before the watermark. The last
 * record of each group that gave records carries the mark; as a group's last change may give none, the changelog
 * holds its newest record back until the next record, the next group's first change, or the end of what the
 * watermark lets it read decides. Rows of an initial snapshot share one valid-from, but each snapshot change is a
 * group of its own: a sink would otherwise hold a whole initial load in memory. The mark depends only on the feed, so
 * a restart at any record gives the same marks.
 */
final class ViewChangelog {
    private static final int FEED_PAGE = 256;

    /** A record, its offset, and whether it is the last record of its group. */
    record Entry(ViewOffset offset, ChangelogEncoder.Encoded record, boolean groupEnd) {
    }

    private final ViewDefinition view;
    private final ChangeFeed feed;
    private final DeltaJoin join;
    private final ChangelogEncoder encoder;
    private final String viewName;
    /** The last change whose view changes are all handed out. */
    private Change done = Change.START;
    private final Deque<Change> pending = new ArrayDeque<>();
    private DeltaJoin.Expansion expansion;
    /** A resume: in this phase, this candidate's first {@code skipRecords} records were written before. */
    private int skipPhase = -1;
    private byte[] skipCandidate;
    private int skipRecords;
    /**
     * Every change valid at or before this was read from the feed (handed out, or being expanded). If the feed's
     * history start passes it, versions this view has not read were pruned, or the replica was rebuilt.
     */
    private long readUpTo = Long.MIN_VALUE;
    /** Whether this view has read anything: a view that starts from the beginning reads whatever is retained. */
    private boolean started;
    /** Progress, for metrics: written by the task's thread, read by the metrics reporter's. */
    private volatile long changesRead;
    private volatile long viewChanges;
    private volatile long currentFanOut;
    private volatile long lastValidFrom = Long.MIN_VALUE;
    /** The newest record, not handed out yet: whether it ends its group is not known yet. */
    private Entry held;

    ViewChangelog(ViewDefinition view, ChangeFeed feed, DeltaJoin join, ChangelogEncoder encoder, String viewName, ViewOffset after) {
        this.view = view;
        this.feed = feed;
        this.join = join;
        this.encoder = encoder;
        this.viewName = viewName;
        if (after != null) {
            started = true;
            // Unknown how far the view had read before the restart; the task warns when its position is older.
            readUpTo = Math.max(after.change().id().validFrom(), feed.historyStart());
            expansion = join.resume(after.change(), after.phase(), after.candidate());
            checkInsertOnly(expansion);
            skipPhase = after.phase();
            skipCandidate = after.candidate();
            skipRecords = after.record() + 1;
        }
    }

    /** Up to {@code max} records, from changes valid up to {@code upTo}; a change fanning out further goes on in the next call. */
    List<Entry> next(long upTo, int max) {
        long historyStart = feed.historyStart();
        if (historyStart == Long.MAX_VALUE) {
            return List.of(); // the replica is taking a new snapshot: nothing can be read yet
        }
        checkHistory(historyStart, readUpTo);
        // What this call's reads rely on: the view's reads so far, or for a view not started, all that is retained now.
        long readFrom = started ? readUpTo : historyStart;
        List<Entry> out = new ArrayList<>();
        while (out.size() < max) {
            if (expansion == null) {
                Change next = nextChange(upTo);
                if (next == null) {
                    readUpTo = Math.max(readUpTo, upTo);
                    // Everything valid up to the watermark is read: the held record's group is complete.
                    release(out, true);
                    break;
                }
                if (held != null && !sameGroup(held.offset().change(), next)) {
                    release(out, true);
                }
                if (!started) {
                    // From the beginning the view reads every retained version: its history is whole from the start on.
                    readUpTo = Math.max(readUpTo, historyStart);
                    started = true;
                }
                if (next.id().validFrom() > Long.MIN_VALUE) {
                    // Feed order: everything valid before this change was read.
                    readUpTo = Math.max(readUpTo, next.id().validFrom() - 1);
                }
                expansion = join.expand(next);
                checkInsertOnly(expansion);
                changesRead++;
                currentFanOut = 0;
                lastValidFrom = next.id().validFrom();
            }
            ViewChange vc = expansion.next();
            if (vc == null) {
                done = expansion.change();
                expansion = null;
                skipPhase = -1;
                continue;
            }
            viewChanges++;
            currentFanOut++;
            List<ChangelogEncoder.Encoded> encoded = encoder.encode(vc);
            for (int i = skipFor(vc); i < encoded.size(); i++) {
                Entry e = new Entry(new ViewOffset(expansion.change(), vc.phase(), vc.candidate(), i), encoded.get(i), false);
                release(out, !sameGroup(held == null ? null : held.offset().change(), e.offset().change()));
                held = e;
            }
        }
        // After the reads too: a prune or a rebuild during them may have taken versions they read as absent.
        checkHistory(feed.historyStart(), readFrom);
        return out;
    }

    private void checkHistory(long historyStart, long readFrom) {
        if (started && historyStart != Long.MAX_VALUE && historyStart > readFrom) {
            throw new ConnectException("view " + viewName + " lost history: the replica's history now starts at " + historyStart
                    + ", after the view's last read (" + readFrom + "), because retention pruned versions the view had not read"
                    + " or the replica was rebuilt. Rebuild the view: stop the connector, reset its offsets (DELETE /connectors/"
                    + viewName + "/offsets), clear its target, start it again; and keep replica.history.retention.ms above the"
                    + " view's longest lag");
        }
    }

    /** Hands the held record out, if any, marked as its group's end or not. */
    private void release(List<Entry> out, boolean groupEnd) {
        if (held != null) {
            out.add(groupEnd ? new Entry(held.offset(), held.record(), true) : held);
            held = null;
        }
    }

    /**
     * Whether two changes are of one group: the same valid-from, but for snapshot rows (valid from the beginning of
     * time), each of which is a group of its own.
     */
    static boolean sameGroup(Change a, Change b) {
        if (a == null || b == null || a.id().validFrom() != b.id().validFrom()) {
            return false;
        }
        return a.id().validFrom() != Version.BEGINNING_OF_TIME || a.compareTo(b) == 0;
    }

    private int skipFor(ViewChange vc) {
        if (skipPhase < 0) {
            return 0;
        }
        boolean same = vc.phase() == skipPhase && Arrays.equals(vc.candidate(), skipCandidate);
        skipPhase = -1;
        return same ? skipRecords : 0;
    }

    private Change nextChange(long upTo) {
        if (pending.isEmpty()) {
            pending.addAll(feed.changesAfter(done, upTo, FEED_PAGE));
        }
        Change c = pending.poll();
        if (c != null && c.id().validFrom() > upTo) {
            // Read ahead under a higher bound than this call's: wait for the watermark.
            pending.addFirst(c);
            return null;
        }
        return c;
    }

    private void checkInsertOnly(DeltaJoin.Expansion e) {
        boolean left = join.isLeft(e.change().table());
        ViewSide side = view.side(left);
        if (side.insertOnly() && !e.isInsert() && !e.isNoop()) {
            throw new ConnectException("view " + viewName + ": " + side.table() + " is declared insert-only (view."
                    + (left ? "left" : "right") + ".insert.only=true) but its change at " + e.change().id()
                    + " updates or deletes a row. Set it to false and use view.encoding UPSERT or RETRACT, then rebuild the view"
                    + " (reset the connector's offsets and clear its target)");
        }
    }

    /** Source changes read from the feed and expanded (a change resumed after a restart counts again). */
    long changesRead() {
        return changesRead;
    }

    /** View changes produced (before any skipped on a resume). */
    long viewChanges() {
        return viewChanges;
    }

    /** View changes the change being expanded has produced so far: the progress of a large fan-out. */
    long currentFanOut() {
        return currentFanOut;
    }

    /** The valid-from (commit time) of the last change read; MIN_VALUE before the first. */
    long lastValidFrom() {
        return lastValidFrom;
    }
}
