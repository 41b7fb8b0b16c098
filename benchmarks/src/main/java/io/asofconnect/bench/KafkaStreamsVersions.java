package io.asofconnect.bench;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;

/**
 * The lookup peer: Kafka Streams' RocksDB-backed versioned store
 * ({@code Stores.persistentVersionedKeyValueStore}) opened in this JVM, without a topology, through the
 * test-utils' {@link MockProcessorContext} (changelog off, which that context cannot serve and which a lookup
 * never touches), loaded with the same versions as {@link BenchVersions}: key = the row id, value = the row as
 * JSON bytes, valid from the same time. Its {@code get(key, asOf)} hands back the bytes undecoded, which favours
 * the peer against our store's decoded rows. Built fresh in a directory of its own on every run.
 */
final class KafkaStreamsVersions implements AutoCloseable {
    private final Path dir;
    private final VersionedKeyValueStore<Long, byte[]> store;

    KafkaStreamsVersions(int keys, int versions) {
        try {
            dir = Files.createTempDirectory(BenchVersions.dir(), "kstreams-versioned-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the Kafka Streams state directory", e);
        }
        Properties config = new Properties();
        config.put(StreamsConfig.APPLICATION_ID_CONFIG, "asof-bench");
        config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        config.put(StreamsConfig.STATE_DIR_CONFIG, dir.toString());
        MockProcessorContext<Object, Object> context = new MockProcessorContext<>(config, new TaskId(0, 0), dir.toFile());
        // History retention far beyond the data set's span, so no version is dropped as too old.
        store = Stores.versionedKeyValueStoreBuilder(
                        Stores.persistentVersionedKeyValueStore("bench-versions", Duration.ofDays(3650)),
                        Serdes.Long(), Serdes.ByteArray())
                .withLoggingDisabled()
                .build();
        store.init(context.getStateStoreContext(), store);
        load(keys, versions);
    }

    private void load(int keys, int versions) {
        JsonConverter json = new JsonConverter();
        json.configure(Map.of("schemas.enable", "false"), false);
        long started = System.nanoTime();
        BenchVersions.forEach(keys, versions, (k, v) ->
                store.put((long) k, json.fromConnectData("bench", BenchVersions.ROW, BenchVersions.row(k, v)),
                        BenchVersions.validFrom(k, v)));
        store.flush();
        double secs = (System.nanoTime() - started) / 1e9;
        long puts = (long) keys * versions;
        System.out.printf("%nKafka Streams versioned store loaded with %d versions in %.1f s (%.0f puts/s)%n",
                puts, secs, puts / secs);
    }

    VersionedRecord<byte[]> get(long key, long asOf) {
        return store.get(key, asOf);
    }

    Path dir() {
        return dir;
    }

    /** Closes the store (RocksDB writes out its memtables) and returns the bytes its files then take. */
    long closeAndMeasure() {
        store.close();
        return BenchVersions.treeBytes(dir);
    }

    /** Deletes the state directory; call after {@link #closeAndMeasure}. */
    @Override
    public void close() {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            System.err.println("could not delete " + dir + ": " + e.getMessage());
        }
    }
}
