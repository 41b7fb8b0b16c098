package io.asofconnect.writer;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.SinkTaskContext;
import org.slf4j.Logger;

import java.sql.SQLException;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * How a sink task that hosts an {@link ExactlyOnceWriter} retries: taking partitions over in {@code open}
 * ({@link #claim}), writing ({@link #write}) and, while a retry is pending, re-reading the offsets rows before
 * an offset commit ({@link #reconcileBeforeCommit}); and what it says when it gives up ({@link #fatal}). Every
 * host uses this one, so that the sink and the joins retry alike and give the same advice.
 *
 * <p>A transient failure of a write is rolled back and retried through Connect: a {@link RetriableException},
 * with {@code context.timeout(retry.backoff.ms)}, makes Connect redeliver the same batch later while the
 * partitions stay paused. The next write first reconciles (learns from the offsets rows what committed, or that
 * the task was fenced) and counts as a retry, up to {@code max.retries}; a write that succeeds starts the count
 * again. Taking partitions over cannot be retried that way (it runs in the consumer's rebalance callback), so
 * {@link #claim} retries in place, within {@link #OPEN_BUDGET_MS}.
 *
 * <p>Whatever ends the task goes through the host's {@code fail} function (given to the constructor), which
 * keeps it as the task's failure and abandons the writer; this class keeps no failure of its own. Not thread
 * safe: the host calls it under its own lock.
 */
public final class WriterRetries {
    /**
     * The most a task's {@code open} spends taking partitions over, retries included. It runs in the consumer's rebalance
     * callback, so it must return well within {@code max.poll.interval.ms} (300 s by default), or the group drops
     * the task and the rebalance starts over. It must also outlast the server's ending of a frozen former owner's
     * transaction (idle_in_transaction_session_timeout), whose row lock on the offsets row a take-over waits for.
     */
    public static final long OPEN_BUDGET_MS = ConnectionFactory.IDLE_IN_TRANSACTION_TIMEOUT_MS + 60_000L;

    /** The default of {@link #targetTables(String)}. */
    public static final String TARGET_TABLES = "the target tables";

    /** One attempt at taking partitions over, given the time left for its statements. */
    @FunctionalInterface
    public interface Claim<T> {
        T attempt(long timeoutMs) throws SQLException;
    }

    /** A database action: a flush, or a reconcile. */
    @FunctionalInterface
    public interface SqlAction {
        void run() throws SQLException;
    }

    private final String connectionUser;
    private final String tableSchema;
    private final String offsetsTableName;
    private final int maxRetries;
    private final long retryBackoffMs;
    private final Logger log;
    private final String who;
    private final UnaryOperator<ConnectException> fail;
    private Runnable retried = () -> { };
    private String targetTables = TARGET_TABLES;
    private long openBudgetMs = OPEN_BUDGET_MS;

    private int failedAttempts;
    /**
     * The last write failed for a transient reason: the next one first learns from the offsets table what committed,
     * and counts as a retry.
     */
    private boolean retryPending;

    /**
     * @param connectionUser   the user named in the advice to grant privileges (null when left to the URL)
     * @param tableSchema      the schema of the offsets table
     * @param offsetsTableName the offsets table
     * @param maxRetries       {@code max.retries}
     * @param retryBackoffMs   {@code retry.backoff.ms}
     * @param log              the host's logger: the retry warnings come out under the host's name
     * @param who              the task, as problem lines name it ({@code LogContext})
     * @param fail             keeps an exception as the task's failure (abandoning the writer) and returns the one to throw
     */
    public WriterRetries(String connectionUser, String tableSchema, String offsetsTableName, int maxRetries, long retryBackoffMs,
                         Logger log, String who, UnaryOperator<ConnectException> fail) {
        this.connectionUser = connectionUser;
        this.tableSchema = tableSchema;
        this.offsetsTableName = offsetsTableName;
        this.maxRetries = maxRetries;
        this.retryBackoffMs = retryBackoffMs;
        this.log = log;
        this.who = who;
        this.fail = fail;
    }

    /** Called once for every failed attempt that is retried (the host's retries metric). */
    public WriterRetries onRetry(Runnable retried) {
        this.retried = retried;
        return this;
    }

    /**
     * How the advice for a missing privilege names the tables the host writes besides the offsets table; the sink
     * says "the target tables (DELETE too with delete.enabled)". Default {@value #TARGET_TABLES}.
     */
    public WriterRetries targetTables(String targetTables) {
        this.targetTables = targetTables;
        return this;
    }

    /** The bound on {@link #claim}; {@link #OPEN_BUDGET_MS} unless a test wants it shorter. */
    public WriterRetries openBudgetMs(long openBudgetMs) {
        this.openBudgetMs = openBudgetMs;
        return this;
    }

    public int maxRetries() {
        return maxRetries;
    }

    public long retryBackoffMs() {
        return retryBackoffMs;
    }

    public long openBudgetMs() {
        return openBudgetMs;
    }

    /** {@link #claim(Collection, Claim)} with {@link ExactlyOnceWriter#claim}. */
    public Map<TopicPartition, OffsetStore.Claim> claim(ExactlyOnceWriter writer, Collection<TopicPartition> assigned) {
        return claim(assigned, timeoutMs -> writer.claim(assigned, timeoutMs));
    }

    /**
     * Retries a transient failure up to {@code max.retries} times, but never past {@link #openBudgetMs()} in all:
     * each attempt's statements are cut off at the time left (the connection attempt has its own 10 s bound).
     * Sleeps {@code retry.backoff.ms} between attempts, on the caller's thread.
     *
     * @throws ConnectException through the host's {@code fail} when it gives up; without it when interrupted while
     *                          waiting to retry
     */
    public <T> T claim(Collection<TopicPartition> assigned, Claim<T> claim) {
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(openBudgetMs);
        for (int attempt = 0; ; attempt++) {
            try {
                return claim.attempt(Math.max(1L, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
            } catch (SQLException e) {
                if (SqlErrors.classify(e) != SqlErrors.Kind.TRANSIENT || attempt >= maxRetries) {
                    throw fail.apply(fatal("taking over partitions in " + offsetsTableName, e, attempt));
                }
                if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(retryBackoffMs) >= deadline) {
                    throw fail.apply(new ConnectException("taking over " + assigned.size() + " partitions in " + offsetsTableName
                            + " failed (" + SqlErrors.describe(e) + ") through " + (attempt + 1) + " attempts in "
                            + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + " ms; the task gives up after "
                            + openBudgetMs + " ms because partitions are taken over inside the consumer's rebalance callback,"
                            + " which must return well within max.poll.interval.ms. Nothing was written; restart the task"
                            + " when the target database is reachable", e));
                }
                retried.run();
                log.warn("{}: could not claim partitions ({}), attempt {} of {}; retrying in {} ms. Check that the target"
                        + " database is reachable and accepts connections", who, SqlErrors.describe(e), attempt + 1,
                        maxRetries + 1, retryBackoffMs);
                sleep(retryBackoffMs);
            }
        }
    }

    /** Whether the last write failed for a transient reason and its retry has not yet reconciled. */
    public boolean retryPending() {
        return retryPending;
    }

    /**
     * One write: {@code reconcile} first when a retry is pending, then {@code write}. A transient failure is
     * counted, logged and thrown as a {@link RetriableException} after asking Connect (through {@code context}, if
     * any) to come back in {@code retry.backoff.ms}; past {@code max.retries}, or for any other failure, the task
     * fails through the host's {@code fail}. The host keeps its own bookkeeping of what was written (its
     * buffer) around this call.
     *
     * @param doing what failed, for the message ("writing 12 records"); asked only on failure
     * @param context where to set the retry's timeout; null in tests without a context
     */
    public void write(SqlAction reconcile, SqlAction write, Supplier<String> doing, SinkTaskContext context) {
        try {
            if (retryPending) {
                reconcile.run();
                retryPending = false;
            }
            write.run();
            failedAttempts = 0;
        } catch (SQLException e) {
            retryPending = true;
            if (SqlErrors.classify(e) != SqlErrors.Kind.TRANSIENT || failedAttempts >= maxRetries) {
                throw fail.apply(fatal(doing.get(), e, failedAttempts));
            }
            failedAttempts++;
            retried.run();
            log.warn("{}: writing to the target failed ({}); rolled back, retry {} of {} in {} ms, nothing is lost. If it"
                    + " repeats, check that the target database is reachable", who, SqlErrors.describe(e), failedAttempts,
                    maxRetries, retryBackoffMs);
            if (context != null) {
                context.timeout(retryBackoffMs);
            }
            throw new RetriableException("the target database is unavailable (" + SqlErrors.describe(e) + "); retry "
                    + failedAttempts + " of " + maxRetries);
        } catch (ConnectException e) {
            throw fail.apply(e);
        }
    }

    /**
     * Before an offset commit while a retry is pending: learns from the offsets rows what the failed write
     * committed, or that the task was fenced (it then fails, through {@code fail}, without throwing). A read, not
     * an attempt: it does not count against {@code max.retries}, and when it fails the next write retries.
     */
    public void reconcileBeforeCommit(SqlAction reconcile) {
        try {
            reconcile.run();
            retryPending = false;
        } catch (SQLException e) {
            log.debug("Offsets rows not re-read before the offset commit ({}); the next put retries", SqlErrors.describe(e));
        } catch (ConnectException e) {
            fail.apply(e);
        }
    }

    /**
     * The exception that ends the task after {@code e}: what failed, the error without data, and what to do
     * about it (the GRANT to paste, the option to set).
     *
     * @param retries how many retries were made before giving up, for a transient failure
     */
    public ConnectException fatal(String doing, SQLException e, int retries) {
        String state = SqlErrors.state(e);
        String detail = SqlErrors.describe(e);
        String server = SqlErrors.safeMessage(e);
        String what = server == null ? detail : detail + ": " + server;
        String advice;
        if ("42501".equals(state)) {
            advice = "grant the user " + connectionUser + " SELECT, INSERT, UPDATE on the offsets table "
                    + tableSchema + "." + offsetsTableName + offsetsGrant() + " and " + targetTables
                    + ", and CREATE on the schema if tables must be created; then restart the task";
        } else if ("42P01".equals(state)) {
            advice = "create the target table, or set " + WriterSettings.SCHEMA_EVOLUTION + "=BASIC";
        } else if ("42703".equals(state)) {
            advice = "a record field has no column: add the column, or set " + WriterSettings.SCHEMA_EVOLUTION + "=BASIC";
        } else if (state != null && state.startsWith("28")) {
            advice = "check " + WriterSettings.CONNECTION_USER + " and " + WriterSettings.CONNECTION_PASSWORD;
        } else if (SqlErrors.classify(e) == SqlErrors.Kind.TRANSIENT) {
            advice = "the target stayed unavailable through " + retries + " retries (" + WriterSettings.MAX_RETRIES
                    + "); nothing was lost, restart the task when the database is back";
        } else {
            advice = "nothing of this flush was committed; fix the cause and restart the task";
        }
        ConnectException ce = new ConnectException(doing + " failed (" + what + "); " + advice);
        if (SqlErrors.classify(e) != SqlErrors.Kind.RECORD) {
            ce.initCause(e);
        }
        return ce;
    }

    /** The GRANT statement for the offsets table, ready to paste, or nothing when a name cannot be quoted. */
    private String offsetsGrant() {
        try {
            return " (GRANT SELECT, INSERT, UPDATE ON " + PostgresDialect.quote(tableSchema) + "."
                    + PostgresDialect.quote(offsetsTableName) + " TO " + PostgresDialect.quote(connectionUser) + ")";
        } catch (RuntimeException e) {
            return "";
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConnectException("interrupted while waiting to retry");
        }
    }
}
