package io.asofconnect.transforms;

import io.asofconnect.enrich.EnrichConfig;
import io.asofconnect.enrich.Fixtures;
import io.asofconnect.enrich.ReplicaLease;
import io.asofconnect.enrich.TestReplica;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.metrics.LocalPluginMetrics;
import io.asofconnect.replica.config.ReplicaConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;
import java.util.function.Function;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.asofconnect.enrich.Fixtures.CUSTOMERS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The transform's lifecycle around a real store: configure acquires, apply enriches, close releases. */
class AsOfEnrichTest {
    @TempDir
    Path dir;
    TestReplica replica;
    final AtomicInteger held = new AtomicInteger();

    /** Hands out the test replica and counts the holds, as the worker's registry would. */
    final Function<Map<String, ?>, ReplicaLease> source = props -> {
        held.incrementAndGet();
        return ReplicaLease.of(replica.lookup(), held::decrementAndGet);
    };

    @BeforeEach
    void setUp() {
        replica = new TestReplica(dir, CUSTOMERS);
        replica.put(CUSTOMERS, RowKey.of(7), 1_000, Fixtures.customerV1(7, "Alice", "10.50"));
        replica.commit(10_000);
    }

    @AfterEach
    void tearDown() {
        replica.close();
    }

    @Test
    void enrichesSinkRecordsAndReleasesTheReplicaOnClose() {
        AsOfEnrich<SinkRecord> t = new AsOfEnrich<>(source);
        t.configure(Fixtures.props());
        assertThat(held).hasValue(1);
        SinkRecord out = t.apply(Fixtures.order(1, 7, 2_000));
        assertThat(((Struct) out.value()).getStruct("customers").getString("name")).isEqualTo("Alice");
        t.close();
        assertThat(held).hasValue(0);
    }

    @Test
    void lookupsArePublishedThroughThePluginMetricsConnectHandsIt() {
        AsOfEnrich<SinkRecord> t = new AsOfEnrich<>(source);
        t.configure(Fixtures.props());
        try (LocalPluginMetrics metrics = new LocalPluginMetrics()) {
            t.withPluginMetrics(metrics);
            t.apply(Fixtures.order(1, 7, 2_000));
            t.apply(Fixtures.order(2, 7, 3_000));
            t.apply(Fixtures.order(3, 99, 2_000));
            assertThat(metric(metrics, "enrich-lookups-total")).isEqualTo(3);
            assertThat(metric(metrics, "enrich-hits-total")).isEqualTo(2);
            assertThat(metric(metrics, "enrich-misses-total")).isEqualTo(1);
            assertThat(metric(metrics, "enrich-out-of-history-total")).isZero();
        } finally {
            t.close();
        }
    }

    @Test
    void aRecordHeldForTheWatermarkIsCountedWhileItWaitsAndWhenItGoesLate() throws Exception {
        AsOfEnrich<SinkRecord> t = new AsOfEnrich<>(source);
        t.configure(Fixtures.props(EnrichConfig.LATENESS_WAIT_MS, "1500", EnrichConfig.ON_LATE, "CURRENT_WITH_HEADER"));
        try (LocalPluginMetrics metrics = new LocalPluginMetrics()) {
            t.withPluginMetrics(metrics);
            assertThat(metric(metrics, "enrich-held-records")).isZero();
            // Event time 50,000 lies past the watermark (10,000): the transform holds the record, then goes late.
            CompletableFuture<SinkRecord> late = CompletableFuture.supplyAsync(() -> t.apply(Fixtures.order(1, 7, 50_000)));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            while (metric(metrics, "enrich-held-records") == 0 && System.nanoTime() < deadline && !late.isDone()) {
                Thread.sleep(10);
            }
            assertThat(metric(metrics, "enrich-held-records")).as("held while it waits").isEqualTo(1);
            SinkRecord out = late.get(10, TimeUnit.SECONDS);
            assertThat(out.headers().lastWithName(EnrichConfig.LATE_HEADER)).isNotNull();
            assertThat(metric(metrics, "enrich-held-records")).isZero();
            assertThat(metric(metrics, "enrich-late-records-total")).isEqualTo(1);
            assertThat(metric(metrics, "enrich-hold-time-ms-max")).isGreaterThanOrEqualTo(1_400);
            // A record the replica can answer at once is neither held nor late.
            t.apply(Fixtures.order(2, 7, 2_000));
            assertThat(metric(metrics, "enrich-late-records-total")).isEqualTo(1);
        } finally {
            t.close();
        }
    }

    private static double metric(LocalPluginMetrics metrics, String name) {
        return metrics.registry().metrics().entrySet().stream().filter(e -> e.getKey().name().equals(name))
                .map(e -> ((Number) e.getValue().metricValue()).doubleValue()).findFirst().orElseThrow();
    }

    @Test
    void worksOnSourceRecordsToo() {
        AsOfEnrich<SourceRecord> t = new AsOfEnrich<>(source);
        t.configure(Fixtures.props());
        SinkRecord o = Fixtures.order(1, 7, 2_000);
        SourceRecord in = new SourceRecord(Map.of("p", 1), Map.of("o", 1), o.topic(), null, o.keySchema(), o.key(),
                o.valueSchema(), o.value(), o.timestamp());
        SourceRecord out = t.apply(in);
        assertThat(((Struct) out.value()).getStruct("customers").getString("name")).isEqualTo("Alice");
        assertThat(out.sourceOffset()).isEqualTo(in.sourceOffset());
        t.close();
    }

    @Test
    void dataProblemsAreDataExceptions() {
        AsOfEnrich<SinkRecord> t = new AsOfEnrich<>(source);
        t.configure(Fixtures.props(EnrichConfig.ON_MISS, "FAIL"));
        assertThatThrownBy(() -> t.apply(Fixtures.order(1, 99, 2_000))).isInstanceOf(DataException.class);
        t.close();
    }

    @Test
    void theTransformWaitsForChangesCommittedOneProbeIntervalBeforeARecordReachedIt() {
        AsOfEnrich<SinkRecord> t = new AsOfEnrich<>(source);
        // Probes every 1000 ms, margin 50 ms: the transform's bound trails the source clock by 1050 ms.
        t.configure(Fixtures.props(ReplicaConfig.WATERMARK_INTERVAL_MS, "1000", EnrichConfig.LATENESS_WAIT_MS, "50"));
        replica.setSourceClock(11_050);
        assertThat(((Struct) t.apply(Fixtures.order(1, 7, 2_000)).value()).getStruct("customers").getString("name")).isEqualTo("Alice");
        replica.setSourceClock(11_051);
        assertThatThrownBy(() -> t.apply(Fixtures.order(1, 7, 2_000))).isInstanceOf(DataException.class)
                .hasMessageContaining("reached the connector").hasMessageContaining("(10001)");
        t.close();
    }

    @Test
    void anUncapturedTableFailsConfigureAndReleasesTheReplica() {
        AsOfEnrich<SinkRecord> t = new AsOfEnrich<>(source);
        assertThatThrownBy(() -> t.configure(Fixtures.props(EnrichConfig.TABLE, "public.nope")))
                .isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.TABLE);
        assertThat(held).hasValue(0);
        t.close();
    }

    @Test
    void aBadConfigFailsBeforeTheReplicaIsAcquired() {
        AsOfEnrich<SinkRecord> t = new AsOfEnrich<>(source);
        assertThatThrownBy(() -> t.configure(Fixtures.props(EnrichConfig.MODE, "VERSION")))
                .isInstanceOf(ConfigException.class).hasMessageContaining(EnrichConfig.VERSION_FIELD);
        assertThat(held).hasValue(0);
    }

    @Test
    void configHoldsTheEnrichAndTheReplicaKeys() {
        AsOfEnrich<SinkRecord> t = new AsOfEnrich<>();
        assertThat(t.config().names()).contains(EnrichConfig.TABLE, EnrichConfig.ON_LATE, ReplicaConfig.NAME, ReplicaConfig.TABLES);
        assertThat(t.config()).isSameAs(AsOfEnrich.CONFIG_DEF);
        assertThat(AsOfEnrich.OVERVIEW_DOC).contains(AsOfEnrich.class.getName());
        assertThat(t.version()).isNotBlank();
    }
}
