package io.asofconnect.it.bench;

import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The input of the window-join benchmark: search queries (the left side) and clicks (the right side) of web
 * sessions, as JsonConverter envelopes with schemas, each record keyed by its {@code session} and {@code url}
 * (key {@code "<session> <url>"}, a plain string, the same bytes on both topics, so that the default partitioner
 * puts a session's query and its clicks on the same partition of each topic), joined on those two fields.
 *
 * <p>Event times at a fixed synthetic rate: event {@code i} (queries at even {@code i}, clicks at odd ones) at
 * {@code base + i / 10} ms, i.e. 10,000 events per second of event time, 5,000 per side; the record timestamp is
 * the event time, and each partition of each topic receives its records in event-time order (nothing is late).
 * A query picks one of {@value #SESSIONS} sessions and one of {@value #URLS} URLs at random; a click copies the
 * session and URL of a query picked uniformly among those of the last {@value #CLICK_SPREAD_MS} ms of event
 * time (so at the same time or after it: every click matches at least its own query, about a third of the
 * queries get no click and some get several). The sequence is fixed by the seed. {@link #matches} counts the
 * joined pairs by brute force over the generated events (the oracle, not the code under test).
 */
final class QueriesAndClicks {
    static final int SESSIONS = 50_000;
    static final int URLS = 500;
    static final long CLICK_SPREAD_MS = 30_000;

    /** One generated event; {@code query} tells the side. */
    record Event(boolean query, long id, String session, String url, long time) {
        String key() {
            return session + " " + url;
        }
    }

    private QueriesAndClicks() {
    }

    /** The first {@code n} events of the sequence {@code seed}, in event-time order. */
    static List<Event> generate(int n, long base, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        List<Event> events = new ArrayList<>(n);
        List<Event> queries = new ArrayList<>(n / 2 + 1);
        int oldest = 0;
        for (int i = 0; i < n; i++) {
            long time = base + i / 10;
            if (i % 2 == 0) {
                Event q = new Event(true, i / 2, "s" + random.nextInt(SESSIONS), "/page/" + random.nextInt(URLS), time);
                queries.add(q);
                events.add(q);
            } else {
                while (queries.get(oldest).time() < time - CLICK_SPREAD_MS) {
                    oldest++;
                }
                Event picked = queries.get(oldest + random.nextInt(queries.size() - oldest));
                events.add(new Event(false, i / 2, picked.session(), picked.url(), time));
            }
        }
        return events;
    }

    /** Pairs (query q, click c) with equal keys and {@code q.time - before <= c.time <= q.time + after}. */
    static long matches(List<Event> events, long beforeMs, long afterMs) {
        Map<String, List<Long>> queryTimes = new HashMap<>();
        for (Event e : events) {
            if (e.query()) {
                queryTimes.computeIfAbsent(e.key(), k -> new ArrayList<>()).add(e.time());
            }
        }
        queryTimes.values().forEach(Collections::sort);
        long pairs = 0;
        for (Event e : events) {
            if (!e.query()) {
                List<Long> times = queryTimes.get(e.key());
                if (times != null) {
                    // c.time - after <= q.time <= c.time + before
                    pairs += firstAbove(times, e.time() + beforeMs) - firstAtLeast(times, e.time() - afterMs);
                }
            }
        }
        return pairs;
    }

    /** Queries without a matching click (what a left join would add as unmatched rows). */
    static long unmatchedQueries(List<Event> events, long beforeMs, long afterMs) {
        Map<String, List<Long>> clickTimes = new HashMap<>();
        for (Event e : events) {
            if (!e.query()) {
                clickTimes.computeIfAbsent(e.key(), k -> new ArrayList<>()).add(e.time());
            }
        }
        clickTimes.values().forEach(Collections::sort);
        long unmatched = 0;
        for (Event e : events) {
            if (e.query()) {
                List<Long> times = clickTimes.get(e.key());
                if (times == null || firstAbove(times, e.time() + afterMs) - firstAtLeast(times, e.time() - beforeMs) == 0) {
                    unmatched++;
                }
            }
        }
        return unmatched;
    }

    private static int firstAtLeast(List<Long> sorted, long value) {
        int lo = 0;
        int hi = sorted.size();
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (sorted.get(mid) < value) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    private static int firstAbove(List<Long> sorted, long value) {
        return value == Long.MAX_VALUE ? sorted.size() : firstAtLeast(sorted, value + 1);
    }

    /** Produces the queries to {@code left} and the clicks to {@code right}, in event order, and waits for all. */
    static void produce(KafkaBroker broker, String left, String right, List<Event> events) {
        Map<String, String> queryFields = new LinkedHashMap<>();
        queryFields.put("session", "string");
        queryFields.put("url", "string");
        queryFields.put("query_id", "int64");
        queryFields.put("terms", "string");
        queryFields.put("results", "int32");
        queryFields.put("event_time", "int64");
        ObjectNode querySchema = JsonEvents.structSchema("bench.Query", queryFields);
        Map<String, String> clickFields = new LinkedHashMap<>();
        clickFields.put("session", "string");
        clickFields.put("url", "string");
        clickFields.put("click_id", "int64");
        clickFields.put("position", "int32");
        clickFields.put("dwell_ms", "int64");
        clickFields.put("event_time", "int64");
        ObjectNode clickSchema = JsonEvents.structSchema("bench.Click", clickFields);
        try (JsonEvents producer = new JsonEvents(broker)) {
            for (Event e : events) {
                ObjectNode p = JsonEvents.payload();
                p.put("session", e.session());
                p.put("url", e.url());
                if (e.query()) {
                    p.put("query_id", e.id());
                    p.put("terms", "terms of query " + e.id() + " for " + e.url());
                    p.put("results", (int) (e.id() % 50));
                } else {
                    p.put("click_id", e.id());
                    p.put("position", (int) (e.id() % 10));
                    p.put("dwell_ms", 100 + e.id() % 20_000);
                }
                p.put("event_time", e.time());
                producer.sendAsync(e.query() ? left : right, null, e.time(), e.key().getBytes(StandardCharsets.UTF_8),
                        JsonEvents.envelope(e.query() ? querySchema : clickSchema, p));
            }
            producer.flush();
        }
    }
}
