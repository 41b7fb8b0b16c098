package io.asofconnect.it;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongPredicate;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.Waits;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.utils.Utils;

/**
 * Random search traffic for the window join, streamed in (scaled) real time: {@code queries} (the left side:
 * session, url, ts, query) and {@code clicks} (the right side: session, url, ts), JSON with schemas, keyed by the
 * session so that the default partitioner puts a session on the same partition of both topics. The event time is
 * the {@code ts} field (epoch millis); the Kafka record timestamp is half an hour earlier with a random spread, so a
 * join on the record timestamp would pair other records.
 *
 * <p>Each session has one to three queries on a few shared urls (so the composite key session+url matters both
 * ways) and clicks around each query: inside the window, exactly on both of its bounds, one millisecond outside
 * them, well after it, and on another url of the session; some queries get no click. A record reaches Kafka at its
 * event time plus a random delay below {@link #MAX_DELAY_MS}, so the topics are out of order, and clicks often
 * reach Kafka before their query. Every partition of both topics also gets a background record every
 * {@link #BACKGROUND_EVERY_MS} ms of event time (a session of its own, so it matches nothing) until the end: no
 * partition falls silent while the traffic flows, and all end at the same event time.
 *
 * <p>With {@code MAX_DELAY_MS + STEP_MS} below the connector's allowed lateness no record is late on its
 * partition; {@link JoinOracle#late} checks that from the offsets.
 */
final class ClickStream {

    enum Side { LEFT, RIGHT }

    /** A record as generated; {@code ts} is its absolute event time, {@code query} null on the right side. */
    record Event(Side side, String session, String url, long ts, String query, int partition, boolean background) {
    }

    /** A record as Kafka took it: its event, its offset in its partition, and its place in the send order. */
    record Sent(Event event, long offset, long seq) {
        int partition() {
            return event.partition();
        }
    }

    static final String[] URLS = {"/home", "/docs", "/pricing", "/blog"};
    /** Event time advances in steps of this many ms; records are sent at the first step at or after their arrival. */
    static final long STEP_MS = 100;
    /** A record reaches Kafka up to this long after its event time (exclusive). */
    static final long MAX_DELAY_MS = 1_200;
    static final long BACKGROUND_EVERY_MS = 200;
    /** Event time runs this many times faster than the wall clock while streaming. */
    static final double SPEED = 2.0;
    /** Queries of a session come this long after its start at the earliest, so early clicks stay after the start. */
    private static final long FIRST_QUERY_AFTER_MS = 1_100;
    private static final long RECORD_TIMESTAMP_LAG_MS = 1_800_000;

    private final JsonEvents producer;
    private final String leftTopic;
    private final String rightTopic;
    private final int partitions;
    private final long before;
    private final long after;
    private final Random random;
    private final ObjectNode querySchema;
    private final ObjectNode clickSchema;
    private final List<InFlight> inFlight = new ArrayList<>();
    private final AtomicBoolean ended = new AtomicBoolean();
    private final AtomicInteger sentCount = new AtomicInteger();
    private double lateShare;
    private long lateness;
    /** Per side and partition, the greatest event time sent: what the partition's watermark is computed from. */
    private final Map<String, Long> maxSent = new HashMap<>();
    /** Per side and partition, the last session record sent: a partner for a record on the watermark. */
    private final Map<String, Event> lastSent = new HashMap<>();
    private int sessions;
    private int backgroundKeys;
    private long seq;

    private record InFlight(Event event, long seq, Future<RecordMetadata> metadata) {
    }

    private record Pending(Event event, long arrival, long order) {
    }

    /**
     * @param before the window's {@code join.window.before.ms}: clicks are placed on and next to its bounds
     * @param after  the window's {@code join.window.after.ms}
     */
    ClickStream(JsonEvents producer, String name, int partitions, long before, long after, long seed) {
        this.producer = producer;
        this.leftTopic = name + "_queries";
        this.rightTopic = name + "_clicks";
        this.partitions = partitions;
        this.before = before;
        this.after = after;
        this.random = new Random(seed);
        this.querySchema = JsonEvents.structSchema("query", orderedFields("query", "string"));
        this.clickSchema = JsonEvents.structSchema("click", orderedFields(null, null));
    }

    private static LinkedHashMap<String, String> orderedFields(String extra, String type) {
        LinkedHashMap<String, String> fields = new LinkedHashMap<>();
        fields.put("session", "string");
        fields.put("url", "string");
        fields.put("ts", "int64");
        if (extra != null) {
            fields.put(extra, type);
        }
        return fields;
    }

    /**
     * Makes records late, and nearly so, for a join with {@code lateness}: a share of the sessions' records reaches
     * Kafka after a delay spread evenly up to three times the lateness (some stay on time, some are late by less
     * than the lateness, some by more); and now and then a record goes out whose event time is exactly its
     * partition's watermark (not late) or one millisecond behind it (late), in the session of the last record sent
     * on the other side of that partition, so that it could match.
     */
    ClickStream withLateRecords(double share, long lateness) {
        this.lateShare = share;
        this.lateness = lateness;
        return this;
    }

    String leftTopic() {
        return leftTopic;
    }

    String rightTopic() {
        return rightTopic;
    }

    void createTopics(KafkaBroker broker) {
        broker.createTopic(leftTopic, partitions);
        broker.createTopic(rightTopic, partitions);
    }

    /** True once {@link #run} has sent its last record. */
    boolean ended() {
        return ended.get();
    }

    int sentSoFar() {
        return sentCount.get();
    }

    /**
     * Streams: new sessions start while {@code newSessions} says yes to the event time (ms since the start) of the
     * step; once it says no, none start again. The sessions' remaining records and the background go on until every
     * session's records are out, and the background ends on every partition at the same event time. Blocks until
     * then; returns every record with its offset.
     */
    List<Sent> run(LongPredicate newSessions) {
        long start = System.currentTimeMillis();
        long wallStart = System.nanoTime();
        PriorityQueue<Pending> pending = new PriorityQueue<>(
                Comparator.comparingLong(Pending::arrival).thenComparingLong(Pending::order));
        boolean creating = true;
        long lastSessionTs = 0;
        for (long t = 0; ; t += STEP_MS) {
            creating = creating && newSessions.test(t);
            if (creating) {
                int count = random.nextDouble() < 0.8 ? 1 : 0;
                for (int i = 0; i < count; i++) {
                    lastSessionTs = Math.max(lastSessionTs, newSession(start, t, pending));
                }
            }
            boolean background = t % BACKGROUND_EVERY_MS == 0;
            if (background) {
                for (int p = 0; p < partitions; p++) {
                    for (Side side : Side.values()) {
                        Event e = new Event(side, backgroundSession(side, p), "/background", start + t,
                                side == Side.LEFT ? "background" : null, p, true);
                        pending.add(new Pending(e, t, seq++));
                    }
                }
            }
            while (!pending.isEmpty() && pending.peek().arrival() <= t) {
                send(pending.poll().event());
            }
            if (lateShare > 0 && random.nextDouble() < 0.15) {
                sendOnTheWatermark();
            }
            if (!creating && pending.isEmpty() && background && start + t >= lastSessionTs + 500) {
                break;
            }
            long due = wallStart + (long) ((t + STEP_MS) / SPEED * 1_000_000);
            long wait = due - System.nanoTime();
            if (wait > 0) {
                // Paces the producer; nothing waits here for a result.
                Waits.pause(Duration.ofNanos(wait));
            }
        }
        producer.flush();
        List<Sent> sent = new ArrayList<>(inFlight.size());
        for (InFlight f : inFlight) {
            RecordMetadata m = metadata(f);
            if (m.partition() != f.event().partition()) {
                throw new IllegalStateException("the producer put session " + f.event().session() + " on partition "
                        + m.partition() + ", the test computed " + f.event().partition());
            }
            sent.add(new Sent(f.event(), m.offset(), f.seq()));
        }
        ended.set(true);
        return sent;
    }

    /** One session starting at event time {@code t} (relative); returns its last record's absolute event time. */
    private long newSession(long start, long t, PriorityQueue<Pending> pending) {
        String session = "s" + (++sessions);
        int queries = 1 + random.nextInt(3);
        long last = 0;
        for (int i = 0; i < queries; i++) {
            String url = URLS[random.nextInt(URLS.length)];
            long qts = start + t + FIRST_QUERY_AFTER_MS + random.nextInt(2_000);
            last = Math.max(last, add(pending, start, event(Side.LEFT, session, url, qts, "q" + session + "-" + i)));
            int clicks = random.nextDouble() < 0.25 ? 0 : 1 + random.nextInt(2);
            for (int j = 0; j < clicks; j++) {
                String clickUrl = random.nextDouble() < 0.15 ? URLS[random.nextInt(URLS.length)] : url;
                last = Math.max(last, add(pending, start, event(Side.RIGHT, session, clickUrl, qts + clickOffset(), null)));
            }
        }
        if (random.nextDouble() < 0.3) {
            // A click of the session on any url, at any time around its queries: may match one, may not.
            long cts = start + t + FIRST_QUERY_AFTER_MS + random.nextInt(4_000);
            last = Math.max(last, add(pending, start,
                    event(Side.RIGHT, session, URLS[random.nextInt(URLS.length)], cts, null)));
        }
        return last;
    }

    /** Where a click falls relative to its query: mostly inside the window, often on or just past a bound. */
    private long clickOffset() {
        double r = random.nextDouble();
        if (r < 0.45) {
            return -before + (long) (random.nextDouble() * (before + after + 1));
        } else if (r < 0.55) {
            return -before;
        } else if (r < 0.65) {
            return after;
        } else if (r < 0.75) {
            return -before - 1;
        } else if (r < 0.85) {
            return after + 1;
        } else if (r < 0.92) {
            return -random.nextInt((int) Math.max(1, before));
        }
        return after + 1 + random.nextInt(2_000);
    }

    private long add(PriorityQueue<Pending> pending, long start, Event e) {
        long arrival = e.ts() - start + random.nextInt((int) MAX_DELAY_MS);
        if (lateShare > 0 && random.nextDouble() < lateShare) {
            arrival = e.ts() - start + (long) (random.nextDouble() * (3 * lateness + MAX_DELAY_MS));
        }
        pending.add(new Pending(e, arrival, seq++));
        return e.ts();
    }

    /** A record at exactly its partition's watermark, or 1 ms behind it; see {@link #withLateRecords}. */
    private void sendOnTheWatermark() {
        int p = random.nextInt(partitions);
        Side side = random.nextBoolean() ? Side.LEFT : Side.RIGHT;
        Side other = side == Side.LEFT ? Side.RIGHT : Side.LEFT;
        Event partner = lastSent.get(other + "-" + p);
        Long max = maxSent.get(side + "-" + p);
        if (partner == null || max == null) {
            return;
        }
        long ts = max - lateness - (random.nextBoolean() ? 0 : 1);
        send(event(side, partner.session(), partner.url(), ts, side == Side.LEFT ? "edge@" + ts : null));
    }

    private Event event(Side side, String session, String url, long ts, String query) {
        return new Event(side, session, url, ts, query, partitionOf(session), false);
    }

    private String backgroundSession(Side side, int partition) {
        while (true) {
            String session = "bg-" + side.name().toLowerCase() + "-" + (++backgroundKeys);
            if (partitionOf(session) == partition) {
                return session;
            }
        }
    }

    /** The default partitioner's choice for a keyed record: murmur2 of the key bytes. */
    int partitionOf(String session) {
        return Utils.toPositive(Utils.murmur2(JsonEvents.stringKey(session))) % partitions;
    }

    /** Sends one record of {@code session} now and waits for Kafka to take it. */
    Sent sendNow(Side side, String session, String url, long ts) {
        Event e = event(side, session, url, ts, side == Side.LEFT ? "q" + session + "@" + ts : null);
        send(e);
        producer.flush();
        InFlight f = inFlight.get(inFlight.size() - 1);
        return new Sent(e, metadata(f).offset(), f.seq());
    }

    private void send(Event e) {
        ObjectNode payload = JsonEvents.payload();
        payload.put("session", e.session());
        payload.put("url", e.url());
        payload.put("ts", e.ts());
        if (e.side() == Side.LEFT) {
            payload.put("query", e.query());
        }
        long recordTimestamp = e.ts() - RECORD_TIMESTAMP_LAG_MS + random.nextInt(40_000) - 20_000;
        long order = inFlight.size();
        Future<RecordMetadata> f = producer.sendAsync(e.side() == Side.LEFT ? leftTopic : rightTopic, null,
                recordTimestamp, JsonEvents.stringKey(e.session()),
                JsonEvents.envelope(e.side() == Side.LEFT ? querySchema : clickSchema, payload));
        inFlight.add(new InFlight(e, order, f));
        maxSent.merge(e.side() + "-" + e.partition(), e.ts(), Math::max);
        if (!e.background()) {
            lastSent.put(e.side() + "-" + e.partition(), e);
        }
        sentCount.incrementAndGet();
    }

    private static RecordMetadata metadata(InFlight f) {
        try {
            return f.metadata().get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while producing", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("Could not produce", e);
        }
    }
}
