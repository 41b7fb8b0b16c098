package io.asofconnect.tablejoin;

import io.asofconnect.common.lookup.Change;
import io.asofconnect.common.lookup.ChangeFeed;
import io.asofconnect.common.lookup.IndexDeclaration;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;

/**
 * The delta rule: a change of one table, joined with the other table as it was at that change's point in the feed,
 * is the view's change. Changes are taken one at a time in feed order, so each sees the other table with every
 * earlier change applied and no later one: the view after a change is the join of the two tables as of that change.
 *
 * <p>INNER, a change of side S from row {@code o} to row {@code n} (either absent), with join values {@code jo} and
 * {@code jn}: phase 0 probes the other side's rows matching {@code jo}; each gives an update (when {@code n} still
 * matches it, and the row changed) or a delete. Phase 1, only when the join value changed, probes the rows matching
 * {@code jn}; each gives an insert. A view row's key is made of the two rows' keys, so {@code o}'s and {@code n}'s rows
 * with one partner share a key.
 *
 * <p>LEFT (each left row has at most one right partner): a left change gives one change of its own view row; a right
 * change gives an update of each left row matching it (its right columns set, changed, or set to NULL).
 *
 * <p>Probes read the other table's index a page at a time and the expansion hands out one view change at a time:
 * a change fanning out to a million rows never holds them all.
 */
final class DeltaJoin {
    static final int PAGE = 512;

    private final ViewDefinition view;
    private final ChangeFeed feed;
    private final ViewRows rows;
    private final int pageSize;
    /** Each side's index, built once: every probed row is checked against it. */
    private final IndexDeclaration leftIndex;
    private final IndexDeclaration rightIndex;

    DeltaJoin(ViewDefinition view, ChangeFeed feed, ViewRows rows) {
        this(view, feed, rows, PAGE);
    }

    /** As the production constructor, reading {@code page} index keys at a time (tests cross page ends with small pages). */
    DeltaJoin(ViewDefinition view, ChangeFeed feed, ViewRows rows, int page) {
        this.view = view;
        this.feed = feed;
        this.rows = rows;
        this.pageSize = page;
        this.leftIndex = view.left().index();
        this.rightIndex = view.right().index();
        rows.rightSchemaFrom(this::anyRightSchema);
    }

    /** The schema of some row of the right table the feed holds, or null: a scan, once per task at most. */
    private Schema anyRightSchema() {
        Change after = Change.START;
        while (true) {
            List<Change> changes = feed.changesAfter(after, Long.MAX_VALUE, pageSize);
            for (Change c : changes) {
                if (c.table().equalsIgnoreCase(view.right().table())) {
                    Optional<Version> v = feed.before(c.table(), c.key(), successor(c));
                    if (v.isPresent() && !v.get().isTombstone()) {
                        return v.get().row().schema();
                    }
                }
            }
            if (changes.size() < pageSize) {
                return null;
            }
            after = changes.get(changes.size() - 1);
        }
    }

    /** The smallest feed position after {@code change} for its own row: no version of that row lies between. */
    private static Change successor(Change change) {
        VersionId id = change.id();
        SourcePosition p = id.position();
        return new Change(new VersionId(id.validFrom(), new SourcePosition(p.lsn(), p.ordinal() + 1)), change.table(), change.key());
    }

    /** Whether {@code table} is the view's left table; an error for a table that is neither. */
    boolean isLeft(String table) {
        if (table.equalsIgnoreCase(view.left().table())) {
            return true;
        }
        if (table.equalsIgnoreCase(view.right().table())) {
            return false;
        }
        throw new IllegalArgumentException("the feed gave a change of " + table + ", which is not one of the view's tables");
    }

    /** The view changes of {@code change}, from its start. */
    Expansion expand(Change change) {
        return new Expansion(change, 0, null);
    }

    /** The view changes of {@code change}, from the probe of {@code candidate} (inclusive) in {@code phase}. */
    Expansion resume(Change change, int phase, byte[] candidate) {
        return new Expansion(change, phase, candidate);
    }

    /** The version of the changed row that {@code change} made: the newest sorting before the next possible position. */
    private Struct after(ViewSide side, Change change) {
        return side.present(feed.before(change.table(), change.key(), successor(change)));
    }

    /** One change's view changes, handed out one at a time. */
    final class Expansion {
        private final Change change;
        private final boolean changedLeft;
        private final ViewSide changed;
        private final ViewSide other;
        private final IndexDeclaration changedIndex;
        private final IndexDeclaration otherIndex;
        private final Struct before;
        private final Struct after;
        private final RowKey joinBefore;
        private final RowKey joinAfter;
        private int phase;
        /** The first candidate of the current phase to probe again (a resume), or null. */
        private byte[] resumeAt;
        private List<RowKey> page = List.of();
        private int inPage;
        private RowKey lastProbed;
        private boolean pageExhausted;
        private boolean singleDone;

        private Expansion(Change change, int phase, byte[] resumeAt) {
            this.change = change;
            this.changedLeft = isLeft(change.table());
            this.changed = view.side(changedLeft);
            this.other = view.side(!changedLeft);
            this.before = changed.present(feed.before(change.table(), change.key(), change));
            this.after = DeltaJoin.this.after(changed, change);
            this.changedIndex = changedLeft ? leftIndex : rightIndex;
            this.otherIndex = changedLeft ? rightIndex : leftIndex;
            this.joinBefore = changedIndex.valueOf(before);
            this.joinAfter = changedIndex.valueOf(after);
            this.phase = phase;
            this.resumeAt = resumeAt;
            if (!changedLeft) {
                rows.sawRight(after != null ? after : before);
            }
        }

        Change change() {
            return change;
        }

        /** The row before and after the change, in the changed table's input (filters applied): for insert-only checks. */
        boolean isInsert() {
            return before == null && after != null;
        }

        boolean isNoop() {
            return before == null && after == null;
        }

        /** The next view change, or null when there is none left. */
        ViewChange next() {
            if (view.type() == JoinType.LEFT && changedLeft) {
                if (singleDone) {
                    return null;
                }
                singleDone = true;
                return leftRowChange();
            }
            while (phase <= 1) {
                RowKey value = probeValue();
                if (value == null) {
                    nextPhase();
                    continue;
                }
                RowKey candidate = nextCandidate(value);
                if (candidate == null) {
                    nextPhase();
                    continue;
                }
                ViewChange c = evaluate(value, candidate);
                if (c != null) {
                    return c;
                }
            }
            return null;
        }

        private void nextPhase() {
            phase++;
            page = List.of();
            inPage = 0;
            lastProbed = null;
            pageExhausted = false;
            resumeAt = null;
        }

        /** The join value probed in the current phase, or null when the phase has nothing to probe. */
        private RowKey probeValue() {
            if (view.type() == JoinType.LEFT) {
                // A right change: its left partners all match its join value (the right key, the same before and after).
                return phase == 0 ? (joinBefore != null ? joinBefore : joinAfter) : null;
            }
            if (phase == 0) {
                return joinBefore;
            }
            return joinAfter != null && !joinAfter.equals(joinBefore) ? joinAfter : null;
        }

        private RowKey nextCandidate(RowKey value) {
            if (resumeAt != null) {
                RowKey first = RowKey.decode(resumeAt);
                resumeAt = null;
                lastProbed = first;
                return first;
            }
            if (inPage == page.size()) {
                if (pageExhausted) {
                    return null;
                }
                page = feed.indexed(other.table(), other.joinColumns(), value, lastProbed, pageSize);
                inPage = 0;
                pageExhausted = page.size() < pageSize;
                if (page.isEmpty()) {
                    return null;
                }
            }
            lastProbed = page.get(inPage++);
            return lastProbed;
        }

        /** The view change that the other side's row {@code candidate} gives, or null. */
        private ViewChange evaluate(RowKey value, RowKey candidate) {
            Struct partner = other.present(feed.before(other.table(), candidate, change));
            if (partner == null || !value.equals(otherIndex.valueOf(partner))) {
                return null;
            }
            byte[] probed = candidate.encoded();
            if (view.type() == JoinType.LEFT) {
                return update(rows.row(partner, before), rows.row(partner, after), probed);
            }
            if (phase == 0) {
                Struct old = pair(before, partner);
                if (after != null && value.equals(joinAfter)) {
                    return update(old, pair(after, partner), probed);
                }
                return new ViewChange(ViewChange.Kind.DELETE, rows.key(old), old, null, phase, probed);
            }
            Struct row = pair(after, partner);
            return new ViewChange(ViewChange.Kind.INSERT, rows.key(row), null, row, phase, probed);
        }

        private Struct pair(Struct changedRow, Struct partner) {
            return changedLeft ? rows.row(changedRow, partner) : rows.row(partner, changedRow);
        }

        private ViewChange update(Struct old, Struct row, byte[] probed) {
            if (Objects.equals(old, row)) {
                return null;
            }
            return new ViewChange(ViewChange.Kind.UPDATE, rows.key(row), old, row, phase, probed);
        }

        /** A LEFT view's change of a left row: its one view row, with its partner or NULLs. */
        private ViewChange leftRowChange() {
            Struct old = before == null ? null : rows.row(before, partnerOf(joinBefore));
            Struct row = after == null ? null : rows.row(after, partnerOf(joinAfter));
            if (old == null && row == null) {
                return null;
            }
            if (old == null) {
                return new ViewChange(ViewChange.Kind.INSERT, rows.key(row), null, row, 0, null);
            }
            if (row == null) {
                return new ViewChange(ViewChange.Kind.DELETE, rows.key(old), old, null, 0, null);
            }
            return update(old, row, null);
        }

        /** The right row matching {@code value} at this change, or null: at most one, the right key being the join. */
        private Struct partnerOf(RowKey value) {
            if (value == null) {
                return null;
            }
            RowKey after = null;
            while (true) {
                List<RowKey> keys = feed.indexed(other.table(), other.joinColumns(), value, after, pageSize);
                for (RowKey k : keys) {
                    Struct r = other.present(feed.before(other.table(), k, change));
                    if (r != null && value.equals(otherIndex.valueOf(r))) {
                        return r;
                    }
                }
                if (keys.size() < pageSize) {
                    return null;
                }
                after = keys.get(keys.size() - 1);
            }
        }
    }
}
