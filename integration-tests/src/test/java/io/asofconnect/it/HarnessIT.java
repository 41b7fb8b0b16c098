package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.FreePorts;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.TestPaths;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The harness itself, without our plugin: the parts every other test relies on (durable settings really
 * applied, a restart and a crash of Postgres on the same data directory, a worker that is its own process and
 * whose classpath carries neither our classes nor the Postgres driver).
 */
@ExtendWith(PrintLogsOnFailure.class)
class HarnessIT {

    private static Path work;
    private static PostgresServer postgres;
    private static KafkaBroker broker;

    @BeforeAll
    static void start() {
        work = TestPaths.workDir("harness");
        postgres = PostgresServer.start(work, "pg");
        broker = KafkaBroker.start(work);
    }

    @AfterAll
    static void stop() {
        if (broker != null) {
            broker.close();
        }
        if (postgres != null) {
            postgres.close();
        }
    }

    @Test
    void postgresRunsWithDurableLogicalSettingsAndSurvivesRestartAndCrash() throws Exception {
        try (Connection c = postgres.connect("postgres"); Statement s = c.createStatement()) {
            for (Map.Entry<String, String> expected : Map.of("wal_level", "logical", "fsync", "on",
                    "synchronous_commit", "on", "track_commit_timestamp", "on",
                    "listen_addresses", "127.0.0.1").entrySet()) {
                try (ResultSet rs = s.executeQuery("SHOW " + expected.getKey())) {
                    rs.next();
                    assertThat(rs.getString(1)).as(expected.getKey()).isEqualTo(expected.getValue());
                }
            }
            s.execute("CREATE TABLE survives(id int primary key)");
            s.execute("INSERT INTO survives VALUES (1)");
        }
        postgres.restart();
        try (Connection c = postgres.connect("postgres"); Statement s = c.createStatement()) {
            s.execute("INSERT INTO survives VALUES (2)");
        }
        postgres.crash();
        postgres.startAgain();
        try (Connection c = postgres.connect("postgres"); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM survives")) {
            rs.next();
            assertThat(rs.getInt(1)).as("rows committed before the crash").isEqualTo(2);
        }
    }

    /** A broker's two listeners come from two picks: the same port twice made its storage format fail. */
    @Test
    void freePortsNeverHandOutAPortTwice() {
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < 2_000; i++) {
            assertThat(seen.add(FreePorts.pick())).as("pick %s returned a port handed out before", i).isTrue();
        }
    }

    @Test
    void workerIsASeparateProcessWithOnlyKafkaOnItsClasspath() {
        assertThat(TestPaths.workerClasspath())
                .contains("connect-runtime")
                .doesNotContain("postgresql-")
                .doesNotContain("asof-");
        int port = FreePorts.pick();
        Map<String, String> props = ConnectWorker.distributedProperties(broker, "harness", work.resolve("empty-plugins"),
                port);
        try (ConnectWorker worker = ConnectWorker.distributed("harness-worker", work, props)) {
            assertThat(worker.process().pid()).isNotEqualTo(ProcessHandle.current().pid());
            assertThat(worker.rest().pluginClasses()).contains("org.apache.kafka.connect.transforms.InsertField$Value");
            worker.kill();
            assertThat(worker.process().isAlive()).isFalse();
            worker.restart();
            worker.rest().awaitReady(Duration.ofSeconds(60), worker.process());
        }
    }
}
