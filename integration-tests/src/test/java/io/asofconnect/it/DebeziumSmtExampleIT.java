package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.asofconnect.it.harness.TestPipeline;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.harness.Waits;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code config-examples/distributed/debezium-orders-enriched.json}: Debezium captures {@code orders}, and
 * AsOfEnrich adds to each order its customer as of the order's commit, while customers change tiers.
 */
@ExtendWith(PrintLogsOnFailure.class)
class DebeziumSmtExampleIT {

    private static final String DB = "orders_shop";
    private static final String TOPIC = "shop.public.orders";
    private static final ObjectMapper JSON = new ObjectMapper();

    private static TestPipeline pipeline;
    private static PostgresServer postgres;
    private static KafkaBroker broker;
    private static ConnectWorker worker;
    private static Path work;

    @BeforeAll
    static void start() {
        pipeline = TestPipeline.start("debezium-smt");
        work = pipeline.work();
        postgres = pipeline.postgres();
        broker = pipeline.broker();
        worker = pipeline.distributedWorker("worker", "debezium");
    }

    @AfterAll
    static void stop() {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void eachOrderCarriesItsCustomerAsOfTheOrdersCommit() throws Exception {
        postgres.createDatabase(DB);
        Map<Integer, TreeMap<Long, String>> tiers = new HashMap<>();
        try (Connection c = postgres.connect(DB); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE customers (id int PRIMARY KEY, tier text NOT NULL)");
            s.execute("CREATE TABLE orders (id int PRIMARY KEY, customer_id int NOT NULL, amount int NOT NULL)");
            s.execute("INSERT INTO customers VALUES (1, 'bronze'), (2, 'bronze')");
            tiers.computeIfAbsent(1, k -> new TreeMap<>()).put(Long.MIN_VALUE, "bronze");
            tiers.computeIfAbsent(2, k -> new TreeMap<>()).put(Long.MIN_VALUE, "bronze");
        }
        Path secrets = work.resolve("secrets.properties");
        Files.writeString(secrets, "postgres.password=postgres\n");
        Map<String, String> values = Map.of("PG_HOST", postgres.host(), "PG_PORT", Integer.toString(postgres.port()),
                "PG_USER", PostgresServer.USER, "SOURCE_DB", DB, "SECRETS_FILE", secrets.toString(),
                "REPLICATION_FACTOR", "1");
        worker.rest().putConnectorConfig("orders-enriched",
                ConfigTemplates.connectorConfig("distributed/debezium-orders-enriched.json", values));
        worker.rest().awaitRunning("orders-enriched", 1, Duration.ofSeconds(120));

        Map<Integer, String> expected = new HashMap<>();
        String[] ladder = {"silver", "gold", "platinum"};
        int orderId = 0;
        try (Connection c = postgres.connect(DB)) {
            for (int round = 0; round < 6; round++) {
                int customer = 1 + round % 2;
                long changed = commitTime(c, "UPDATE customers SET tier = '" + ladder[round % 3] + "' WHERE id = "
                        + customer, "customers", "id = " + customer);
                tiers.get(customer).put(changed, ladder[round % 3]);
                for (int i = 0; i < 3; i++) {
                    orderId++;
                    int who = 1 + orderId % 2;
                    long committed = commitTime(c, "INSERT INTO orders VALUES (" + orderId + ", " + who + ", "
                            + (10 * orderId) + ")", "orders", "id = " + orderId);
                    // Valid at the order's commit, in whole milliseconds as Debezium's source.ts_ms has it.
                    expected.put(orderId, tiers.get(who).floorEntry((committed / 1000) * 1000 + 999).getValue());
                }
            }
        }

        Map<Integer, String> seen = readOrders(expected.size(), Duration.ofSeconds(120));
        assertThat(seen).isEqualTo(expected);
        worker.rest().deleteConnector("orders-enriched");
    }

    /** Runs one autocommitted statement and returns its commit time (epoch micros); then lets the clock move on. */
    private static long commitTime(Connection c, String sql, String table, String where) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
            try (ResultSet rs = s.executeQuery("SELECT (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)"
                    + "::bigint FROM " + table + " WHERE " + where)) {
                rs.next();
                long micros = rs.getLong(1);
                Waits.until(() -> System.currentTimeMillis() > micros / 1000 + 1, Duration.ofSeconds(1), "the clock");
                return micros;
            }
        }
    }

    private static Map<Integer, String> readOrders(int count, Duration timeout) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "it-orders-reader");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        Map<Integer, String> seen = new HashMap<>();
        List<String> problems = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(TOPIC));
            Awaitility.await(count + " enriched orders on " + TOPIC).atMost(timeout).pollInterval(Duration.ofMillis(10))
                    .until(() -> {
                        consumer.poll(Duration.ofMillis(500)).forEach(r -> {
                            try {
                                JsonNode payload = JSON.readTree(r.value()).path("payload");
                                int id = payload.path("after").path("id").asInt();
                                seen.put(id, payload.path("customers").path("tier").asText(null));
                            } catch (java.io.IOException e) {
                                problems.add(e.toString());
                            }
                        });
                        return seen.size() >= count;
                    });
        }
        assertThat(problems).isEmpty();
        return seen;
    }
}
