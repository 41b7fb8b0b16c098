package io.asofconnect.enrich;

import io.asofconnect.common.record.EventTimes;
import io.asofconnect.common.record.FieldPath;
import io.asofconnect.common.record.KeyExtractor;

import io.asofconnect.enrich.EnrichConfig.Mode;
import io.asofconnect.enrich.EnrichOutcome.Dropped;
import io.asofconnect.enrich.EnrichOutcome.Enriched;
import io.asofconnect.enrich.EnrichOutcome.Failed;
import io.asofconnect.enrich.EnrichOutcome.NotYetVisible;
import io.asofconnect.common.logging.LogContext;
import io.asofconnect.common.lookup.LookupResult;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;
import io.asofconnect.common.lookup.VersionLookup;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.header.Headers;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Joins each record with the version of one replicated row, as configured by {@link EnrichConfig}.
 *
 * <p>Contract:
 * <ul>
 *   <li>{@link #tryEnrich} never blocks. Under {@code enrich.mode=AS_OF} it answers only from versions at or
 *       below the replica's watermark; for an event time past it, it returns {@link NotYetVisible}, and the
 *       caller asks again later and, after its own bounded wait, calls {@link #resolveLate}. Under
 *       {@code enrich.mode=VERSION} the same holds for the named version's valid-from (see
 *       {@code exactIfVisible}).</li>
 *   <li>Read-your-writes ({@code enrich.read.your.writes}, on by default), in every mode: a record is answered
 *       only once the watermark has also passed the time it reached the connector ({@link ReceiptTimes}), so
 *       every change committed before the record was produced has been applied, whatever the record's event
 *       time and whatever the replica's valid-from; until then it is {@link NotYetVisible} like any other.
 *       After a restart or a rebuild of the replica this holds the first records until the replica has caught
 *       up with the present, instead of answering them from the file's past.</li>
 *   <li>Deterministic: the same record and the same replica state at or below the watermark give an equal
 *       output record (equal schema, in fact the same cached instance, and equal values). One exception,
 *       of schema only: a miss under {@code enrich.on.miss=NULL} takes the row schema of the latest hit (its
 *       values are all null either way), and before any hit it has only the version-metadata columns.</li>
 *   <li>The output record keeps the topic, partition, key, key schema, timestamp and headers (plus
 *       {@link EnrichConfig#LATE_HEADER} and {@link EnrichConfig#LATE_WATERMARK_HEADER} under
 *       {@code CURRENT_WITH_HEADER}); only the value and value schema change.</li>
 *   <li>A record with a null value (a tombstone) passes through unchanged.</li>
 *   <li>Every problem with a record is a {@link Failed} holding a {@link DataException} whose message names the
 *       option, field path and types, never the record's values. Failures of the replica itself (a corrupted
 *       store) are not data errors and propagate as they are.</li>
 * </ul>
 *
 * <p>Safe for concurrent use.
 */
public final class EnrichmentEngine implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EnrichmentEngine.class);
    private final EnrichConfig config;
    private final VersionLookup lookup;
    private final KeyExtractor keys;
    private final EventTimes times;
    private final OutputSchemas schemas;
    private final OutputWriter writer;
    private final ReceiptTimes receipts;
    /** What a shape check names in its message; built once, not per record. */
    private final String shapePurpose;
    /**
     * {@link #NOT_LAGGING}, or the event time T whose wait in {@link #enrichBlocking} timed out: the replica's
     * watermark did not pass T within the bound. Until it has, a record past the watermark is resolved late at
     * once instead of waiting again, so a stalled replica costs one bound per stall, not one per record.
     */
    private final AtomicLong laggingBehind = new AtomicLong(NOT_LAGGING);
    private static final long NOT_LAGGING = Long.MIN_VALUE;
    /**
     * The source clock when the engine was built. Until the replica's watermark passes it, the replica is still
     * on its first catch-up (an initial snapshot, or the changes committed while the task was down), and waits
     * get {@code enrich.startup.wait.ms}: that is start-up, not a stall.
     */
    private final long startedAt;
    private volatile boolean caughtUp;
    private final String who;
    /** Threads waiting in {@link #enrichBlocking} now (the transform's held records). */
    private final AtomicInteger waiting = new AtomicInteger();
    /** Where {@link #enrichBlocking} counts its waits and late records; null until someone publishes them. */
    private volatile EnrichmentMetrics waitMetrics;

    /**
     * @throws ConfigException when the replica does not capture {@code enrich.table}
     */
    public EnrichmentEngine(EnrichConfig config, VersionLookup lookup) {
        if (!lookup.tables().contains(config.table())) {
            throw new ConfigException(EnrichConfig.TABLE, config.table(), "the replica does not capture this table;"
                    + " it captures " + new TreeSet<>(lookup.tables()) + ". Add the table to the replica's captured"
                    + " tables or correct " + EnrichConfig.TABLE);
        }
        this.config = config;
        this.lookup = lookup;
        this.keys = new KeyExtractor(config.keySource(), config.keyFields(), EnrichConfig.KEY_SOURCE, EnrichConfig.KEY_FIELDS);
        this.times = new EventTimes(config.timeSource(), config.timeField(), config.timeHeader(),
                new EventTimes.Options(EnrichConfig.TIME_SOURCE, EnrichConfig.TIME_FIELD, EnrichConfig.TIME_HEADER));
        this.schemas = new OutputSchemas(config);
        this.writer = new OutputWriter(config, schemas);
        this.receipts = new ReceiptTimes(lookup, config.readYourWrites());
        this.shapePurpose = "as-of enrichment of " + config.table();
        this.startedAt = lookup.watermark().sourceNow();
        String context = LogContext.current();
        this.who = context != null ? context : shapePurpose;
    }

    /**
     * Counts {@link #enrichBlocking}'s waits (hold time) and late records into {@code metrics}. The sink,
     * which holds records itself and never calls enrichBlocking, counts its own.
     */
    public void countWaitsInto(EnrichmentMetrics metrics) {
        this.waitMetrics = metrics;
    }

    /** How many records {@link #enrichBlocking} is holding now, waiting for the watermark. */
    public int waiting() {
        return waiting.get();
    }

    /**
     * "connector NAME task N" when built on a Connect task's thread (the transform's configure, the sink's
     * start), as problem lines name the task.
     */
    public String who() {
        return who;
    }

    /**
     * How long a record that cannot be answered yet may wait, in milliseconds, before {@code enrich.on.late}
     * applies: {@code enrich.startup.wait.ms} (or the lateness wait, if larger) until the replica has caught
     * up once with the time the engine started, {@code enrich.lateness.wait.ms} from then on.
     */
    public long waitBoundMs() {
        return startingUp() ? Math.max(config.startupWaitMs(), config.latenessWaitMs()) : config.latenessWaitMs();
    }

    private boolean startingUp() {
        if (caughtUp) {
            return false;
        }
        if (lookup.watermark().get() < startedAt) {
            return true;
        }
        caughtUp = true;
        LOG.info("Replica for table {} caught up with the task's start; records now wait at most {}={} ms", config.table(),
                EnrichConfig.LATENESS_WAIT_MS, config.latenessWaitMs());
        return false;
    }

    /** The read-your-writes bounds of records, per {@code enrich.read.your.writes}. */
    public ReceiptTimes receipts() {
        return receipts;
    }

    public EnrichConfig config() {
        return config;
    }

    /**
     * Enriches {@code record}, which reached the connector at {@code receivedAt} ({@link ReceiptTimes#now()}
     * then), if it can be answered now; never blocks.
     */
    public <R extends ConnectRecord<R>> EnrichOutcome<R> tryEnrich(R record, long receivedAt) {
        return enrich(record, receivedAt, false);
    }

    /** {@link #tryEnrich(ConnectRecord, long)} for a record received just now. */
    public <R extends ConnectRecord<R>> EnrichOutcome<R> tryEnrich(R record) {
        return tryEnrich(record, receipts.now());
    }

    /**
     * For a record whose {@link #tryEnrich} said {@link NotYetVisible} and whose caller has waited as long as
     * {@code enrich.lateness.wait.ms} allows: answers it if the watermark has passed by now, else applies
     * {@code enrich.on.late}. Never returns {@link NotYetVisible}; never blocks.
     */
    public <R extends ConnectRecord<R>> EnrichOutcome<R> resolveLate(R record, long receivedAt) {
        return enrich(record, receivedAt, true);
    }

    /** {@link #resolveLate(ConnectRecord, long)} for a record received just now. */
    public <R extends ConnectRecord<R>> EnrichOutcome<R> resolveLate(R record) {
        return resolveLate(record, receipts.now());
    }

    /**
     * For the transform: {@link #tryEnrich}, waiting at most {@link #waitBoundMs()} in all for the watermark to
     * pass every time the record waits on, then {@link #resolveLate}.
     *
     * <p>The bound holds per stall, not per record: once a wait times out (the watermark did not pass the
     * record's event time T), later records whose event time is past the current watermark are resolved late
     * at once, without waiting, until the watermark has passed T; then waiting resumes. A poll of many
     * records behind a stalled replica therefore waits about one bound in all, and the task stays well inside
     * the consumer's {@code max.poll.interval.ms}. Records at or below the watermark are answered as always.
     *
     * @param receivedAt when the record reached the connector ({@link ReceiptTimes#now()} then)
     * @return the record to pass on, or null when it is dropped
     * @throws DataException when the record cannot be enriched (Connect applies {@code errors.tolerance})
     * @throws ConnectException when interrupted while waiting (the task is stopping)
     */
    public <R extends ConnectRecord<R>> R enrichBlocking(R record, long receivedAt) {
        EnrichOutcome<R> outcome = tryEnrich(record, receivedAt);
        EnrichmentMetrics metrics = waitMetrics;
        if (outcome instanceof NotYetVisible<R> n && shouldWait(n.watermark())) {
            long since = System.nanoTime();
            waiting.incrementAndGet();
            try {
                outcome = awaitVisible(record, receivedAt, n);
            } finally {
                waiting.decrementAndGet();
            }
            if (metrics != null) {
                metrics.released(System.nanoTime() - since);
            }
        }
        if (outcome instanceof NotYetVisible<R>) {
            if (metrics != null) {
                metrics.late();
            }
            outcome = resolveLate(record, receivedAt);
        }
        if (outcome instanceof Enriched<R> e) {
            return e.record();
        }
        if (outcome instanceof Failed<R> f) {
            throw f.reason();
        }
        if (outcome instanceof Dropped<R>) {
            return null;
        }
        throw new IllegalStateException("resolveLate never answers NotYetVisible");
    }

    /** {@link #enrichBlocking(ConnectRecord, long)} for a record received just now. */
    public <R extends ConnectRecord<R>> R enrichBlocking(R record) {
        return enrichBlocking(record, receipts.now());
    }

    /** False while an earlier wait timed out and the watermark has not yet passed that wait's event time. */
    private boolean shouldWait(long watermark) {
        long behind = laggingBehind.get();
        if (behind == NOT_LAGGING) {
            return true;
        }
        if (watermark >= behind) {
            // Caught up with the point we gave up on; another thread may have recorded a later one meanwhile.
            if (laggingBehind.compareAndSet(behind, NOT_LAGGING)) {
                LOG.info("Replica watermark for table {} caught up; waiting for late records again", config.table());
            }
            return laggingBehind.get() == NOT_LAGGING;
        }
        return false;
    }

    /**
     * Waits, within one bound in all, until the record can be answered. A record can wait on two times in turn:
     * the time it reached the connector, then its event time when that is later (a producer's clock, or an event
     * stamped just after the receipt bound), so each wakeup asks the engine again instead of taking the first
     * time as the only one.
     *
     * @return the outcome once answerable, or the last {@link NotYetVisible} when the bound ran out
     */
    private <R extends ConnectRecord<R>> EnrichOutcome<R> awaitVisible(R record, long receivedAt, NotYetVisible<R> first) {
        long bound = waitBoundMs();
        long deadline = System.nanoTime() + Duration.ofMillis(bound).toNanos();
        EnrichOutcome<R> outcome = first;
        while (outcome instanceof NotYetVisible<R> n) {
            long remaining = deadline - System.nanoTime();
            boolean passed;
            try {
                passed = remaining > 0 && (n.receipt()
                        ? lookup.watermark().awaitReceipts(n.visibleAt(), Duration.ofNanos(remaining))
                        : lookup.watermark().await(n.visibleAt(), Duration.ofNanos(remaining)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ConnectException("interrupted while waiting for the replica's watermark to pass a record's"
                        + " event time (table " + config.table() + ")", e);
            }
            if (!passed) {
                if (laggingBehind.getAndAccumulate(n.visibleAt(), Math::max) == NOT_LAGGING) {
                    LOG.warn("{}: the replica's watermark for table {} did not pass a record's event time within {} ms;"
                            + " records past the watermark get {}={} without waiting until it catches up. Check the replica"
                            + " (metric replica-watermark-lag-ms, its log lines) or raise {}", who, config.table(), bound,
                            EnrichConfig.ON_LATE, config.onLate(), EnrichConfig.LATENESS_WAIT_MS);
                }
                return outcome;
            }
            outcome = tryEnrich(record, receivedAt);
        }
        return outcome;
    }

    private <R extends ConnectRecord<R>> EnrichOutcome<R> enrich(R record, long receivedAt, boolean late) {
        if (record.value() == null) {
            return new Enriched<>(record);
        }
        try {
            validateShape(record);
            RowKey key = keys.of(record);
            if (key == null) {
                if (config.onMissingKey() == EnrichConfig.OnMissingKey.PASS_THROUGH) {
                    return new Enriched<>(record);
                }
                throw new DataException(keys.describeMissing(record) + "; set " + EnrichConfig.ON_MISSING_KEY
                        + "=PASS_THROUGH to pass such records on unchanged");
            }
            return lookUp(record, key, receipts.of(record, receivedAt), late);
        } catch (DataException e) {
            return new Failed<>(e);
        }
    }

    /** @param received the record's read-your-writes bound ({@link ReceiptTimes#of}) */
    private <R extends ConnectRecord<R>> EnrichOutcome<R> lookUp(R record, RowKey key, long received, boolean late) {
        String table = config.table();
        long covered = lookup.watermark().receiptWatermark();
        if (received > covered) {
            return notYetVisible(record, key, received, covered, true, late, "the time the record reached the connector");
        }
        if (config.mode() == Mode.CURRENT) {
            LookupResult current = lookup.current(table, key);
            if (current instanceof LookupResult.NotYetVisible n) {
                // Only a replica without history (being rebuilt) answers "current" so: hold until it has one.
                return notYetVisible(record, key, Math.max(received, n.watermark() + 1), n.watermark(), false, late,
                        "the start of the rebuilt replica's history");
            }
            return decide(record, current, null);
        }
        long eventTime;
        LookupResult result;
        if (config.mode() == Mode.VERSION) {
            VersionId id = versionIdOf(record);
            eventTime = id.validFrom();
            result = exactIfVisible(table, key, id);
        } else {
            eventTime = times.of(record);
            result = lookup.asOf(table, key, eventTime);
        }
        if (result instanceof LookupResult.NotYetVisible n) {
            return notYetVisible(record, key, eventTime, n.watermark(), false, late, "the record's event time");
        }
        return decide(record, result, null);
    }

    /**
     * A record that cannot be answered until the watermark passes {@code visibleAt}: {@link NotYetVisible}, or,
     * once the caller's wait is over ({@code late}), {@code enrich.on.late}.
     *
     * @param receipt whether {@code visibleAt} is the record's receipt, which the receipt watermark answers
     * @param what    what {@code visibleAt} is, for the message
     */
    private <R extends ConnectRecord<R>> EnrichOutcome<R> notYetVisible(R record, RowKey key, long visibleAt, long watermark,
                                                                         boolean receipt, boolean late, String what) {
        if (!late) {
            // The replica can move its watermark there sooner than its probe schedule would, if it knows.
            if (receipt) {
                lookup.watermark().wantReceipts(visibleAt);
            } else {
                lookup.watermark().want(visibleAt);
            }
            return new NotYetVisible<>(visibleAt, watermark, receipt);
        }
        String table = config.table();
        if (config.onLate() == EnrichConfig.OnLate.FAIL) {
            boolean starting = startingUp();
            String bound = starting ? EnrichConfig.STARTUP_WAIT_MS : EnrichConfig.LATENESS_WAIT_MS;
            return new Failed<>(new DataException("the replica's watermark (" + watermark + ") did not pass " + what
                    + " (" + visibleAt + ") within " + bound + "=" + waitBoundMs() + " for table " + table
                    + (starting ? ": the replica has not caught up since the task started (its initial snapshot or"
                            + " catch-up is slower than that). Check the replica's snapshot progress in the log, raise "
                            : ": the replica is lagging or stopped. Check the replica (metric replica-watermark-lag-ms), raise ")
                    + bound + ", or set " + EnrichConfig.ON_LATE + "=CURRENT_WITH_HEADER"));
        }
        return decide(record, lookup.current(table, key), watermark);
    }

    /**
     * The watermark rule of {@code enrich.mode=VERSION}, and its only place: a version id whose valid-from is
     * past the watermark is {@link LookupResult.NotYetVisible}, whatever the store holds, because such a
     * version may not have arrived yet and "absent" now could be "found" on a replay. Only at or below the
     * watermark is {@link VersionLookup#exact} asked, which itself applies no watermark. Should the lookup
     * ever apply the same rule, both agree and this check is merely redundant.
     */
    private LookupResult exactIfVisible(String table, RowKey key, VersionId id) {
        long w = lookup.watermark().get();
        return id.validFrom() > w ? new LookupResult.NotYetVisible(w) : lookup.exact(table, key, id);
    }

    /** @param lateWatermark non-null when the current row stands in for a late record's (headers added) */
    private <R extends ConnectRecord<R>> EnrichOutcome<R> decide(R record, LookupResult result, Long lateWatermark) {
        String table = config.table();
        if (result instanceof LookupResult.Found f) {
            return new Enriched<>(write(record, f.version(), lateWatermark));
        }
        if (result instanceof LookupResult.Absent) {
            switch (config.onMiss()) {
                case NULL:
                    return new Enriched<>(write(record, null, lateWatermark));
                case DROP:
                    return new Dropped<>();
                default:
                    return new Failed<>(new DataException("no row of table " + table + " was valid for the record's key"
                            + " at the " + (config.mode() == Mode.VERSION ? "version asked for" : "record's event time")
                            + " (" + EnrichConfig.ON_MISS + "=FAIL); set " + EnrichConfig.ON_MISS + " to NULL or DROP to"
                            + " pass or drop such records"));
            }
        }
        if (result instanceof LookupResult.OutOfHistory o) {
            return new Failed<>(new DataException("the record's event time lies before the"
                    + " history the replica holds for table " + table + " (history start " + o.historyStart()
                    + ", epoch millis): older versions were pruned by retention, or the replica was rebuilt after that"
                    + " time, so no row can be given without risking a wrong one. Raise the replica's retention or"
                    + " reprocess only newer records"));
        }
        if (result instanceof LookupResult.UnknownTable) {
            return new Failed<>(new DataException("the replica does not capture table " + table + " (" + EnrichConfig.TABLE + ")"));
        }
        // Late, under CURRENT_WITH_HEADER, while the replica has no history at all (it is being rebuilt).
        return new Failed<>(new DataException("the replica holds no rows of table " + table + " yet: it is being rebuilt"
                + " after damage or a gap, and its watermark did not pass the record within " + EnrichConfig.LATENESS_WAIT_MS
                + "; check the replica's health, or raise " + EnrichConfig.LATENESS_WAIT_MS));
    }

    private <R extends ConnectRecord<R>> R write(R record, Version version, Long lateWatermark) {
        Schema schema = record.valueSchema();
        Object value;
        Schema outSchema;
        if (schema != null) {
            var struct = writer.applyWithSchema(schema, (org.apache.kafka.connect.data.Struct) record.value(), version);
            value = struct;
            outSchema = struct.schema();
        } else {
            value = writer.applySchemaless((java.util.Map<?, ?>) record.value(), version);
            outSchema = null;
        }
        Headers headers = record.headers().duplicate();
        if (lateWatermark != null) {
            headers.addString(EnrichConfig.LATE_HEADER, "true");
            headers.addLong(EnrichConfig.LATE_WATERMARK_HEADER, lateWatermark);
        }
        return record.newRecord(record.topic(), record.kafkaPartition(), record.keySchema(), record.key(),
                outSchema, value, record.timestamp(), headers);
    }

    private void validateShape(ConnectRecord<?> record) {
        if (record.valueSchema() != null) {
            Requirements.requireStruct(record.valueSchema(), record.value(), shapePurpose);
        } else {
            Requirements.requireMap(record.value(), shapePurpose);
        }
    }

    private VersionId versionIdOf(ConnectRecord<?> record) {
        FieldPath path = config.versionField();
        Object v = path.resolve(record.value(), EnrichConfig.VERSION_FIELD);
        if (v == null || v == FieldPath.MISSING) {
            throw new DataException("the version field " + EnrichConfig.VERSION_FIELD + "=" + path + " is "
                    + (v == null ? "null" : "missing") + " in the record value");
        }
        if (!(v instanceof String s)) {
            throw new DataException("the version field " + EnrichConfig.VERSION_FIELD + "=" + path + " has type "
                    + v.getClass().getName() + "; expected a string <validFromMillis>@<lsn>");
        }
        try {
            return VersionId.parse(s);
        } catch (IllegalArgumentException e) {
            throw new DataException("the version field " + EnrichConfig.VERSION_FIELD + "=" + path
                    + " does not hold a version id of the form <validFromMillis>@<lsn>, e.g. 1733080000000@0/16B3748");
        }
    }

    /** Releases the derived-schema and write-plan caches. The lookup belongs to the caller and stays open. */
    @Override
    public void close() {
        writer.clear();
        schemas.clear();
    }
}
