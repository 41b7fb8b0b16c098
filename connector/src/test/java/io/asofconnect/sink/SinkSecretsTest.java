package io.asofconnect.sink;

import io.asofconnect.writer.testing.TargetDatabase;

import io.asofconnect.sink.config.ExactlyOnceJdbcSinkConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;

import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.map;
import static io.asofconnect.sink.ExactlyOnceJdbcSinkTaskTest.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Weak TLS modes are warned about in the log, and the password never shows in a reason given to the errant
 * record reporter (Connect copies it into DLQ headers), in an exception the sink throws, or in the log; nor
 * does a value of a failed row (the docs promise reasons name columns and SQLStates, never values).
 */
class SinkSecretsTest {
    static TargetDatabase db;

    @BeforeAll
    static void startDatabase() throws Exception {
        db = TargetDatabase.start();
        ExactlyOnceJdbcSinkTaskTest.db = db;
    }

    @AfterAll
    static void stopDatabase() throws Exception {
        db.close();
    }

    @Test
    void aWeakSslModeIsWarnedWhenTheConnectorAndTheTaskStartAndAVerifyingOneIsNot() {
        String warning = ExactlyOnceJdbcSinkConfig.CONNECTION_URL + " uses sslmode=";
        for (String query : List.of("?sslmode=disable", "?sslmode=allow", "?sslmode=prefer", "", "?ApplicationName=x&sslmode=DISABLE")) {
            String mode = query.isEmpty() || !query.contains("sslmode") ? "prefer" : query.replaceAll(".*sslmode=", "").toLowerCase(java.util.Locale.ROOT);
            String log = startBothWith("jdbc:postgresql://127.0.0.1:1/app" + query);
            assertThat(log).as("url query '%s'", query)
                    // Off Connect's threads (no logging context) both name the connector from its config.
                    .containsPattern("WARN " + Pattern.quote(ExactlyOnceJdbcSinkConnector.class.getName()) + " - connector tls_sink\\S*: "
                            + Pattern.quote(warning + mode + ","))
                    .containsPattern("WARN " + Pattern.quote(ExactlyOnceJdbcSinkTask.class.getName()) + " - connector tls_sink\\S*: "
                            + Pattern.quote(warning + mode + ","))
                    .contains("use sslmode=verify-full");
        }
        for (String query : List.of("?sslmode=verify-full", "?sslmode=verify-ca", "?sslmode=require", "?ssl=true")) {
            assertThat(startBothWith("jdbc:postgresql://127.0.0.1:1/app" + query)).as("url query '%s'", query)
                    .doesNotContain(warning).contains("Started connector");
        }
    }

    /** The log of starting a connector and a task with this URL (neither connects at start). */
    private static String startBothWith(String url) {
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(unique("tls_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_URL, url);
        try (CapturedLog log = new CapturedLog()) {
            ExactlyOnceJdbcSinkConnector connector = new ExactlyOnceJdbcSinkConnector();
            connector.start(p);
            connector.stop();
            ExactlyOnceJdbcSinkTask task = new ExactlyOnceJdbcSinkTask();
            task.start(p);
            task.stop();
            return log.text();
        }
    }

    @Test
    void thePasswordAndFailedValuesStayOutOfReasonsExceptionsAndLogs() throws Exception {
        String password = "pw-" + UUID.randomUUID();
        String user = unique("secrets_user");
        String topic = unique("secrets");
        db.execute("CREATE ROLE \"" + user + "\" LOGIN PASSWORD '" + password + "'",
                "GRANT CREATE ON SCHEMA public TO \"" + user + "\"",
                "CREATE TABLE \"" + topic + "\" (writer int, seq int CHECK (seq > 0), amount int)",
                "GRANT SELECT, INSERT, UPDATE ON \"" + topic + "\" TO \"" + user + "\"");
        Map<String, String> p = ExactlyOnceJdbcSinkTaskTest.props(unique("secrets_sink"));
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_USER, user);
        p.put(ExactlyOnceJdbcSinkConfig.CONNECTION_PASSWORD, password);
        p.put(ExactlyOnceJdbcSinkConfig.MAX_RETRIES, "0");
        String failedValue = "value-" + UUID.randomUUID();
        TopicPartition tp = new TopicPartition(topic, 0);
        // A record carrying the password itself as a value: the server's error message would quote it.
        List<SinkRecord> batch = List.of(map(topic, 0, 1, "10"), map(topic, 1, 2, password), map(topic, 2, -3, "12"),
                map(topic, 3, 4, failedValue), map(topic, 4, 5, "14"));
        ExactlyOnceJdbcSinkTaskTest.CollectingReporter reporter = new ExactlyOnceJdbcSinkTaskTest.CollectingReporter(p.get("name"));
        String logs;
        try (CapturedLog log = new CapturedLog()) {
            try (SinkDriver d = new SinkDriver(p, reporter).open(tp)) {
                d.deliver(batch);
                assertThat(d.commit()).containsEntry(tp, 5L);
            }
            assertThat(reporter.records).extracting(SinkRecord::kafkaOffset).containsExactly(1L, 2L, 3L);
            assertThat(reporter.errors).allSatisfy(e -> assertThat(fullText(e)).contains("SQLState 2")
                    .doesNotContain(password).doesNotContain(failedValue));

            TopicPartition tp1 = new TopicPartition(topic, 1);
            try (SinkDriver d = new SinkDriver(p, null).open(tp1)) {
                d.deliver(List.of(new SinkRecord(topic, 1, null, null, null, map(topic, 0, 1, password).value(), 0)));
                d.commit();
                assertThat(failureOfNextPut(d)).contains("SQLState 22P02").doesNotContain(password);
            }

            String missing = unique("secrets_missing");
            TopicPartition absent = new TopicPartition(missing, 0);
            try (SinkDriver d = new SinkDriver(p, null).open(absent)) {
                d.deliver(List.of(map(missing, 0, 1, "1")));
                d.commit();
                assertThat(failureOfNextPut(d)).contains("SQLState 42P01").doesNotContain(password);
            }

            db.execute("REVOKE INSERT ON \"" + topic + "\" FROM \"" + user + "\"");
            TopicPartition tp2 = new TopicPartition(topic, 2);
            try (SinkDriver d = new SinkDriver(p, null).open(tp2)) {
                d.deliver(List.of(new SinkRecord(topic, 2, null, null, null, map(topic, 0, 1, "1").value(), 0)));
                d.commit();
                assertThat(failureOfNextPut(d)).contains("SQLState 42501").contains(user).doesNotContain(password);
            }
            // Only the sink's own lines: the embedded server's log, relayed into the same stream, quotes values as any Postgres does.
            logs = log.text().lines().filter(l -> l.contains(" io.asofconnect.")).collect(java.util.stream.Collectors.joining("\n"));
        }
        assertThat(logs).as("the failures were logged").contains("42501").contains("42P01").contains("22P02");
        assertThat(logs).doesNotContain(password).doesNotContain(failedValue);
    }

    /** The message and stack trace of the failure the next put throws, causes included. */
    private static String failureOfNextPut(SinkDriver d) {
        Throwable[] thrown = new Throwable[1];
        assertThatThrownBy(() -> d.task.put(List.of())).isInstanceOf(ConnectException.class).satisfies(e -> thrown[0] = e);
        return fullText(thrown[0]);
    }

    private static String fullText(Throwable t) {
        StringWriter out = new StringWriter();
        t.printStackTrace(new PrintWriter(out));
        return out.toString();
    }
}
