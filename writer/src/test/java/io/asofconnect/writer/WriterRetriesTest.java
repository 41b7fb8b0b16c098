package io.asofconnect.writer;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.SinkTaskContext;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.lang.reflect.Proxy;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The retry bookkeeping and the advice, without a database: attempts fail with the SQLStates Postgres gives. */
class WriterRetriesTest {
    private static final List<TopicPartition> TWO = List.of(new TopicPartition("t", 0), new TopicPartition("t", 1));

    private final List<ConnectException> failures = new ArrayList<>();
    private final AtomicInteger retried = new AtomicInteger();

    private WriterRetries retries(int maxRetries, long backoffMs) {
        return new WriterRetries("writer", "s", "offs", maxRetries, backoffMs, LoggerFactory.getLogger(WriterRetriesTest.class),
                "connector c task 0", e -> {
                    failures.add(e);
                    return e;
                }).onRetry(retried::incrementAndGet);
    }

    private static SQLException sql(String state) {
        return new SQLException("server says " + state, state);
    }

    @Test
    void aClaimIsRetriedThroughTransientFailures() {
        AtomicInteger attempts = new AtomicInteger();
        String claimed = retries(3, 0).claim(TWO, timeoutMs -> {
            assertThat(timeoutMs).isPositive().isLessThanOrEqualTo(WriterRetries.OPEN_BUDGET_MS);
            if (attempts.incrementAndGet() < 3) {
                throw sql("08006");
            }
            return "claimed";
        });
        assertThat(claimed).isEqualTo("claimed");
        assertThat(retried).hasValue(2);
        assertThat(failures).isEmpty();
    }

    @Test
    void aClaimGivesUpAfterMaxRetriesOrAtOnceForAnythingElse() {
        assertThatThrownBy(() -> retries(2, 0).claim(TWO, t -> { throw sql("57P03"); }))
                .isInstanceOf(ConnectException.class)
                .hasMessageStartingWith("taking over partitions in offs failed (SQLState 57P03: server says 57P03); ")
                .hasMessageContaining("the target stayed unavailable through 2 retries (max.retries); nothing was lost");
        assertThat(retried).hasValue(2);
        assertThat(failures).hasSize(1);

        assertThatThrownBy(() -> retries(5, 0).claim(TWO, t -> { throw sql("28P01"); }))
                .hasMessageContaining("check connection.user and connection.password");
        assertThat(retried).as("no retry of a wrong password").hasValue(2);
    }

    @Test
    void aClaimStopsWithinItsBudget() {
        WriterRetries r = retries(100, 200).openBudgetMs(300);
        long start = System.nanoTime();
        assertThatThrownBy(() -> r.claim(TWO, t -> { throw sql("55P03"); }))
                .hasMessageStartingWith("taking over 2 partitions in offs failed (SQLState 55P03) through 2 attempts in ")
                .hasMessageContaining("the task gives up after 300 ms")
                .hasMessageContaining("max.poll.interval.ms")
                .hasCauseInstanceOf(SQLException.class);
        assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(300);
        assertThat(failures).hasSize(1);
    }

    @Test
    void aTransientWriteFailureIsRetriedByConnectAndTheRetryReconcilesFirst() throws Exception {
        WriterRetries r = retries(2, 1234);
        List<String> calls = new ArrayList<>();
        List<Long> timeouts = new ArrayList<>();
        SinkTaskContext context = (SinkTaskContext) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[]{SinkTaskContext.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("timeout")) {
                        timeouts.add((Long) args[0]);
                    }
                    return null;
                });
        WriterRetries.SqlAction reconcile = () -> calls.add("reconcile");
        WriterRetries.SqlAction failing = () -> {
            calls.add("write");
            throw sql("40001");
        };

        assertThatThrownBy(() -> r.write(reconcile, failing, () -> "writing 3 records", context))
                .isInstanceOf(RetriableException.class)
                .hasMessage("the target database is unavailable (SQLState 40001); retry 1 of 2");
        assertThat(r.retryPending()).isTrue();
        assertThat(timeouts).containsExactly(1234L);
        r.write(reconcile, () -> calls.add("write"), () -> "writing 3 records", context);
        assertThat(r.retryPending()).isFalse();
        assertThat(calls).containsExactly("write", "reconcile", "write");

        // A success starts the count again: two more transient failures are retried, the third fails the task.
        calls.clear();
        assertThatThrownBy(() -> r.write(reconcile, failing, () -> "w", null)).isInstanceOf(RetriableException.class).hasMessageEndingWith("retry 1 of 2");
        assertThatThrownBy(() -> r.write(reconcile, failing, () -> "w", null)).isInstanceOf(RetriableException.class).hasMessageEndingWith("retry 2 of 2");
        assertThatThrownBy(() -> r.write(reconcile, failing, () -> "writing 5 records", null))
                .isNotInstanceOf(RetriableException.class)
                .hasMessageStartingWith("writing 5 records failed (SQLState 40001")
                .hasMessageContaining("stayed unavailable through 2 retries");
        assertThat(calls).containsExactly("write", "reconcile", "write", "reconcile", "write");
        assertThat(failures).hasSize(1);
        assertThat(retried).hasValue(3);
    }

    @Test
    void aMissingPrivilegeFailsAtOnceWithTheGrantToPaste() {
        WriterRetries r = retries(5, 0).targetTables("the output table");
        assertThatThrownBy(() -> r.write(() -> { }, () -> { throw sql("42501"); }, () -> "writing 1 records", null))
                .hasMessage("writing 1 records failed (SQLState 42501: server says 42501); grant the user writer SELECT, INSERT, UPDATE"
                        + " on the offsets table s.offs (GRANT SELECT, INSERT, UPDATE ON \"s\".\"offs\" TO \"writer\") and the output"
                        + " table, and CREATE on the schema if tables must be created; then restart the task");
        assertThat(retried).hasValue(0);
        assertThat(r.fatal("x", sql("42P01"), 0)).hasMessageEndingWith("create the target table, or set schema.evolution=BASIC");
        assertThat(r.fatal("x", sql("23505"), 0)).as("a record's error carries no server text").hasMessage(
                "x failed (SQLState 23505); nothing of this flush was committed; fix the cause and restart the task").hasNoCause();
        WriterRetries noUser = new WriterRetries(null, "s", "offs", 1, 0, LoggerFactory.getLogger(WriterRetriesTest.class), "c", e -> e);
        assertThat(noUser.fatal("x", sql("42501"), 0)).as("no GRANT without a user to name")
                .hasMessageContaining("on the offsets table s.offs and the target tables");
    }

    @Test
    void aConnectFailureOfTheWriterFailsTheTask() {
        WriterRetries r = retries(5, 0);
        ConnectException fenced = new ConnectException("taken over");
        assertThatThrownBy(() -> r.write(() -> { }, () -> { throw fenced; }, () -> "w", null)).isSameAs(fenced);
        assertThat(failures).containsExactly(fenced);
    }

    @Test
    void theLookBeforeAnOffsetCommitIsNotAnAttempt() {
        WriterRetries r = retries(1, 0);
        assertThatThrownBy(() -> r.write(() -> { }, () -> { throw sql("08006"); }, () -> "w", null)).isInstanceOf(RetriableException.class);
        r.reconcileBeforeCommit(() -> { throw sql("08006"); });
        assertThat(r.retryPending()).as("still pending: the next write retries").isTrue();
        r.reconcileBeforeCommit(() -> { });
        assertThat(r.retryPending()).isFalse();
        assertThat(failures).isEmpty();
        ConnectException fenced = new ConnectException("taken over");
        r.reconcileBeforeCommit(() -> { throw fenced; });
        assertThat(failures).containsExactly(fenced);
        assertThat(retried).hasValue(1);
    }
}
