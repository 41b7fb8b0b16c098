package io.asofconnect.enrich;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.sink.SinkRecord;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static io.asofconnect.enrich.Fixtures.CUSTOMERS;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * For random histories and event times at or below the watermark, the engine joins the version an
 * independent model picks: per key a list sorted by (valid-from, arrival order), the last entry at or before t.
 */
class AsOfModelPropertyTest {
    private static Path dir;
    private static TestReplica replica;
    private static final AtomicInteger NEXT_KEY = new AtomicInteger(1);

    record Change(long validFrom, boolean delete, String name) {
    }

    @BeforeContainer
    static void open() throws IOException {
        dir = Files.createTempDirectory("asof-model");
        replica = new TestReplica(dir, CUSTOMERS);
    }

    @AfterContainer
    static void close() throws IOException {
        replica.close();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    @Provide
    Arbitrary<List<Change>> histories() {
        Arbitrary<Change> change = Combinators.combine(
                Arbitraries.longs().between(0, 50),
                Arbitraries.integers().between(0, 4).map(i -> i == 0),
                Arbitraries.strings().alpha().ofMinLength(1).ofMaxLength(6)).as(Change::new);
        return change.list().ofMinSize(0).ofMaxSize(12);
    }

    @Property(tries = 150)
    void enrichedRowEqualsTheModelsPick(@ForAll("histories") List<Change> history,
                                         @ForAll("eventTimes") List<Long> eventTimes) {
        int id = NEXT_KEY.getAndIncrement();
        RowKey key = RowKey.of(id);
        List<Version> model = new ArrayList<>();
        for (Change c : history) {
            model.add(c.delete() ? replica.delete(CUSTOMERS, key, c.validFrom())
                    : replica.put(CUSTOMERS, key, c.validFrom(), Fixtures.customerV1(id, c.name(), "1.00")));
        }
        replica.commit(60);
        model.sort(Comparator.comparingLong(Version::validFrom).thenComparing(Version::position));

        EnrichmentEngine engine = new EnrichmentEngine(new EnrichConfig(Fixtures.props()), replica.lookup());
        for (long t : eventTimes) {
            Version expected = null;
            for (Version v : model) {
                if (v.validFrom() <= t) {
                    expected = v;
                }
            }
            SinkRecord out = engine.enrichBlocking(Fixtures.order(1, id, t));
            Struct nested = ((Struct) out.value()).getStruct("customers");
            if (expected == null || expected.isTombstone()) {
                assertThat(nested).as("t=%d", t).isNull();
            } else {
                assertThat(nested).as("t=%d", t).isNotNull();
                assertThat(nested.getString(EnrichConfig.VERSION_COLUMN)).isEqualTo(expected.id().toString());
                assertThat(nested.getString("name")).isEqualTo(expected.row().getString("name"));
            }
        }
    }

    @Provide
    Arbitrary<List<Long>> eventTimes() {
        return Arbitraries.longs().between(-5, 60).list().ofMinSize(1).ofMaxSize(10);
    }
}
