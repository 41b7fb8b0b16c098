package io.asofconnect.windowjoin;

import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;

/**
 * Records the join cannot take, never dropped without a trace: late ones by {@code join.late.policy} (counted,
 * logged at most once a second, recorded for the late table, sent to the DLQ, or failing the task), bad ones (no
 * readable key, time or value) through Connect's errant record reporter, or failing the task without one.
 */
final class RefusedRecords {
    private static final Logger log = LoggerFactory.getLogger(RefusedRecords.class);

    private final LatePolicy policy;
    private final long latenessMs;
    private final JoinMetrics metrics;
    private final ErrantRecordReporter reporter;
    private final String who;
    private long lastWarnNanos;

    RefusedRecords(LatePolicy policy, long latenessMs, JoinMetrics metrics, ErrantRecordReporter reporter, String who) {
        this.policy = policy;
        this.latenessMs = latenessMs;
        this.metrics = metrics;
        this.reporter = reporter;
        this.who = who;
    }

    /**
     * {@code r} (at {@code where}) has event time {@code time}, behind its partition's watermark.
     *
     * @throws ConnectException under {@link LatePolicy#FAIL}, naming the record
     */
    void late(SinkRecord r, String where, SideState s, long time) {
        String what = "the record at " + where + " has event time " + time + ", behind its partition's watermark "
                + s.watermark + " (the greatest event time seen there minus " + JoinConfig.LATENESS_MS + "=" + latenessMs + ")";
        if (policy == LatePolicy.FAIL) {
            throw new ConnectException(what + "; " + JoinConfig.LATE_POLICY + "=FAIL stops the join here. Raise "
                    + JoinConfig.LATENESS_MS + ", or choose DROP or DLQ, and restart the task");
        }
        metrics.late();
        s.pendingLate.add(new SideState.Late(r.originalKafkaOffset(), time, s.watermark));
        long now = System.nanoTime();
        if (now - lastWarnNanos > TimeUnit.SECONDS.toNanos(1)) {
            lastWarnNanos = now;
            log.warn("{}: {}; it joins nothing ({}={}, counted in join-late-records)", who, what, JoinConfig.LATE_POLICY, policy);
        }
        if (policy == LatePolicy.DLQ && reporter != null) {
            reporter.report(r, new DataException(what));
        }
    }

    /**
     * {@code r} (at {@code where}) has no readable key, event time or value.
     *
     * @throws ConnectException without an errant record reporter
     */
    void bad(SinkRecord r, String where, DataException e) {
        metrics.bad();
        if (reporter == null) {
            throw new ConnectException("cannot join the record at " + where + ": " + e.getMessage(), e);
        }
        reporter.report(r, e);
    }
}
