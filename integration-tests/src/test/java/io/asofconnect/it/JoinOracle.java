package io.asofconnect.it;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import io.asofconnect.it.ClickStream.Event;
import io.asofconnect.it.ClickStream.Sent;
import io.asofconnect.it.ClickStream.Side;

/**
 * What the window join must write, computed here from the records as sent (never with the connector's classes):
 * a nested loop over every left and right record, the window's both bounds inclusive, equal session and url, and
 * the unmatched rows the join type asks for. A record late on its own partition (its event time below the greatest
 * event time seen before it on that partition less the allowed lateness, in offset order) joins nothing and has no
 * row of its own.
 */
final class JoinOracle {

    enum JoinType { INNER, LEFT, RIGHT, FULL }

    record Window(long before, long after, long lateness) {
    }

    /**
     * One output row, as the connector's table holds it: the key (partition, left offset, right offset, -1 for a
     * missing side), the kind of match, both event times and each side's fields (null for a missing side).
     */
    record Row(int partition, long leftOffset, long rightOffset, String match, Long leftTime, Long rightTime,
               String leftSession, String leftUrl, Long leftTs, String leftQuery,
               String rightSession, String rightUrl, Long rightTs) {

        static final Comparator<Row> KEY_ORDER = Comparator.comparingInt(Row::partition)
                .thenComparingLong(Row::leftOffset).thenComparingLong(Row::rightOffset);

        String key() {
            return "(" + partition + ", " + leftOffset + ", " + rightOffset + ")";
        }
    }

    private JoinOracle() {
    }

    /** True when {@code r} falls in the window of {@code l} with equal keys: {@code l.ts-before <= r.ts <= l.ts+after}. */
    static boolean matches(Event l, Event r, Window w) {
        return l.partition() == r.partition() && l.session().equals(r.session()) && l.url().equals(r.url())
                && r.ts() >= l.ts() - w.before() && r.ts() <= l.ts() + w.after();
    }

    /** The records late on their own partition, by the per-partition rule, walking each partition in offset order. */
    static Set<Sent> late(List<Sent> sent, long lateness) {
        Map<String, List<Sent>> byPartition = new TreeMap<>();
        for (Sent s : sent) {
            byPartition.computeIfAbsent(s.event().side() + "-" + s.partition(), k -> new ArrayList<>()).add(s);
        }
        Set<Sent> late = new HashSet<>();
        for (List<Sent> records : byPartition.values()) {
            records.sort(Comparator.comparingLong(Sent::offset));
            long max = Long.MIN_VALUE;
            for (Sent s : records) {
                if (max != Long.MIN_VALUE && s.event().ts() < max - lateness) {
                    late.add(s);
                } else {
                    max = Math.max(max, s.event().ts());
                }
            }
        }
        return late;
    }

    /**
     * How close to the lateness rule's boundary the records came, per partition in offset order: records exactly on
     * the watermark (not late), 1 ms behind it (late), late by less than the lateness, later still, and delayed
     * records that stayed on time. A join that moved the boundary by a millisecond or by the lateness would differ.
     */
    static Map<String, Long> lateCoverage(List<Sent> sent, long lateness) {
        Map<String, List<Sent>> byPartition = new TreeMap<>();
        for (Sent s : sent) {
            byPartition.computeIfAbsent(s.event().side() + "-" + s.partition(), k -> new ArrayList<>()).add(s);
        }
        Map<String, Long> c = new TreeMap<>();
        for (List<Sent> records : byPartition.values()) {
            records.sort(Comparator.comparingLong(Sent::offset));
            long max = Long.MIN_VALUE;
            for (Sent s : records) {
                long ts = s.event().ts();
                if (max != Long.MIN_VALUE) {
                    long behind = (max - lateness) - ts;
                    if (behind == 0) {
                        c.merge("on the watermark", 1L, Long::sum);
                    } else if (behind == 1) {
                        c.merge("1 ms behind the watermark", 1L, Long::sum);
                    } else if (behind > 1 && behind < lateness) {
                        c.merge("late by less than the lateness", 1L, Long::sum);
                    } else if (behind >= lateness) {
                        c.merge("late by the lateness or more", 1L, Long::sum);
                    } else if (behind > -lateness && ts < max) {
                        c.merge("behind the greatest time, on time", 1L, Long::sum);
                    }
                }
                max = Math.max(max, ts);
            }
        }
        return c;
    }

    /** The rows a {@code type} join over {@code sent} must write, late records left out. */
    static List<Row> expected(List<Sent> sent, JoinType type, Window w) {
        Set<Sent> late = late(sent, w.lateness());
        List<Sent> left = new ArrayList<>();
        List<Sent> right = new ArrayList<>();
        for (Sent s : sent) {
            if (!late.contains(s)) {
                (s.event().side() == Side.LEFT ? left : right).add(s);
            }
        }
        List<Row> rows = new ArrayList<>();
        Set<Sent> matchedRight = new HashSet<>();
        for (Sent l : left) {
            boolean matched = false;
            for (Sent r : right) {
                if (matches(l.event(), r.event(), w)) {
                    matched = true;
                    matchedRight.add(r);
                    rows.add(matched(l, r));
                }
            }
            if (!matched && (type == JoinType.LEFT || type == JoinType.FULL)) {
                rows.add(leftOnly(l));
            }
        }
        if (type == JoinType.RIGHT || type == JoinType.FULL) {
            for (Sent r : right) {
                if (!matchedRight.contains(r)) {
                    rows.add(rightOnly(r));
                }
            }
        }
        rows.sort(Row.KEY_ORDER);
        return rows;
    }

    /**
     * The unmatched rows of {@code expected} that the data alone never finalizes: the greatest event time of the
     * opposite partition, less the lateness, does not pass their window end. Only the idle rule lets them out, once
     * input stops.
     */
    static List<Row> idleTail(List<Sent> sent, List<Row> expected, Window w) {
        Set<Sent> late = late(sent, w.lateness());
        Map<String, Long> max = new HashMap<>();
        for (Sent s : sent) {
            if (!late.contains(s)) {
                max.merge(s.event().side() + "-" + s.partition(), s.event().ts(), Math::max);
            }
        }
        List<Row> tail = new ArrayList<>();
        for (Row r : expected) {
            if (r.match().equals("LEFT_ONLY")
                    && max.getOrDefault(Side.RIGHT + "-" + r.partition(), Long.MIN_VALUE / 2) - w.lateness()
                    <= r.leftTime() + w.after()) {
                tail.add(r);
            } else if (r.match().equals("RIGHT_ONLY")
                    && max.getOrDefault(Side.LEFT + "-" + r.partition(), Long.MIN_VALUE / 2) - w.lateness()
                    <= r.rightTime() + w.before()) {
                tail.add(r);
            }
        }
        return tail;
    }

    /** Late records that would have matched a record that is not late: the ones whose drop the output shows. */
    static long lateWithPartners(List<Sent> sent, Window w) {
        Set<Sent> late = late(sent, w.lateness());
        long count = 0;
        for (Sent x : late) {
            for (Sent y : sent) {
                if (late.contains(y) || y.event().side() == x.event().side()) {
                    continue;
                }
                Sent l = x.event().side() == Side.LEFT ? x : y;
                Sent r = x.event().side() == Side.LEFT ? y : x;
                if (matches(l.event(), r.event(), w)) {
                    count++;
                    break;
                }
            }
        }
        return count;
    }

    /**
     * Counts of the situations the input must contain for the test to mean something: matched pairs whose click
     * was sent before its query, whose click's event time is before its query's, on each bound of the window; and
     * records one millisecond outside a bound, queries without a click, clicks without a query.
     */
    static Map<String, Long> coverage(List<Sent> sent, Window w) {
        Map<String, Long> c = new TreeMap<>();
        List<Sent> left = sent.stream().filter(s -> s.event().side() == Side.LEFT).toList();
        List<Sent> right = sent.stream().filter(s -> s.event().side() == Side.RIGHT).toList();
        Map<Sent, Boolean> rightMatched = new HashMap<>();
        right.forEach(r -> rightMatched.put(r, false));
        for (Sent l : left) {
            boolean matched = false;
            for (Sent r : right) {
                Event le = l.event();
                Event re = r.event();
                if (!le.session().equals(re.session())) {
                    continue;
                }
                if (matches(le, re, w)) {
                    matched = true;
                    rightMatched.put(r, true);
                    c.merge("matched", 1L, Long::sum);
                    if (r.seq() < l.seq()) {
                        c.merge("matched, click sent first", 1L, Long::sum);
                    }
                    if (re.ts() < le.ts()) {
                        c.merge("matched, click earlier in event time", 1L, Long::sum);
                    }
                    if (re.ts() == le.ts() - w.before()) {
                        c.merge("matched on the lower bound", 1L, Long::sum);
                    }
                    if (re.ts() == le.ts() + w.after()) {
                        c.merge("matched on the upper bound", 1L, Long::sum);
                    }
                } else if (le.url().equals(re.url())) {
                    if (re.ts() == le.ts() - w.before() - 1) {
                        c.merge("same key, 1 ms below the window", 1L, Long::sum);
                    }
                    if (re.ts() == le.ts() + w.after() + 1) {
                        c.merge("same key, 1 ms above the window", 1L, Long::sum);
                    }
                } else if (re.ts() >= le.ts() - w.before() && re.ts() <= le.ts() + w.after()) {
                    c.merge("same session, other url, in the window", 1L, Long::sum);
                }
            }
            if (!matched && !l.event().background()) {
                c.merge("session query without click", 1L, Long::sum);
            }
        }
        rightMatched.forEach((r, m) -> {
            if (!m && !r.event().background()) {
                c.merge("session click without query", 1L, Long::sum);
            }
        });
        return c;
    }

    private static Row matched(Sent l, Sent r) {
        Event le = l.event();
        Event re = r.event();
        return new Row(le.partition(), l.offset(), r.offset(), "MATCHED", le.ts(), re.ts(),
                le.session(), le.url(), le.ts(), le.query(), re.session(), re.url(), re.ts());
    }

    private static Row leftOnly(Sent l) {
        Event le = l.event();
        return new Row(le.partition(), l.offset(), -1, "LEFT_ONLY", le.ts(), null,
                le.session(), le.url(), le.ts(), le.query(), null, null, null);
    }

    private static Row rightOnly(Sent r) {
        Event re = r.event();
        return new Row(re.partition(), -1, r.offset(), "RIGHT_ONLY", null, re.ts(),
                null, null, null, null, re.session(), re.url(), re.ts());
    }
}
