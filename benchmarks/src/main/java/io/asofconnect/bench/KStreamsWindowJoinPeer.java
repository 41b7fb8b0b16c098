package io.asofconnect.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.stream.Stream;

/**
 * The peer of the {@code window-join-vs-kstreams} row: Kafka Streams' {@code KStream#join} of queries (left) and
 * clicks (right) on their record key, {@code JoinWindows.ofTimeDifferenceAndGrace(after, grace).before(0)}, with
 * {@code processing.guarantee=exactly_once_v2}, writing each joined pair as one JSON record into an output topic.
 *
 * <p>It runs in a JVM of its own, started by the integration-test harness ({@code WindowJoinBenchmark}) like the
 * Connect worker that runs ours, and serves that harness over HTTP on 127.0.0.1 so that one JVM runs the warm-up
 * and every measured round, as one worker does on our side: {@code /prepare} builds an application (topology,
 * clients; not timed), {@code /start} starts it, {@code /state} tells its state, {@code /size} the bytes of its
 * state directory (the RocksDB stores), {@code /close} closes it, answers the bytes of its state directory after the close (the stores flushed) and
 * deletes its local state, {@code /exit} ends
 * the JVM. Arguments: {@code <bootstrap servers> <port> <state directory>}.
 *
 * <p>Both inputs carry JsonConverter envelopes ({@code schema} and {@code payload}); like ours, the peer parses
 * every record, keeps each side's payload in its window stores and writes the two payloads' fields, prefixed
 * {@code left_} and {@code right_}, as one JSON object (no schema) with the pair's key.
 */
public final class KStreamsWindowJoinPeer {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Serde<JsonNode> JSON_SERDE = Serdes.serdeFrom(new JsonSerializer(), new JsonDeserializer());

    private final String bootstrap;
    private final Path stateRoot;
    private final Map<String, KafkaStreams> apps = new ConcurrentHashMap<>();
    private final CountDownLatch exit = new CountDownLatch(1);

    private KStreamsWindowJoinPeer(String bootstrap, Path stateRoot) {
        this.bootstrap = bootstrap;
        this.stateRoot = stateRoot;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            throw new IllegalArgumentException("arguments: <bootstrap servers> <port> <state directory>");
        }
        KStreamsWindowJoinPeer peer = new KStreamsWindowJoinPeer(args[0], Files.createDirectories(Path.of(args[2])));
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), Integer.parseInt(args[1])), 8);
        server.setExecutor(Executors.newFixedThreadPool(2));
        server.createContext("/", peer::handle);
        server.start();
        System.out.println("Kafka Streams window-join peer listening on port " + args[1]);
        peer.exit.await();
        server.stop(0);
        peer.apps.values().forEach(app -> app.close(Duration.ofSeconds(30)));
        System.exit(0);
    }

    private void handle(HttpExchange exchange) throws IOException {
        int status = 200;
        String body;
        try {
            Map<String, String> q = query(exchange.getRequestURI().getRawQuery());
            body = switch (exchange.getRequestURI().getPath()) {
                case "/prepare" -> prepare(q);
                case "/start" -> {
                    app(q).start();
                    yield "started";
                }
                case "/state" -> app(q).state().name();
                case "/size" -> Long.toString(bytesUnder(stateRoot.resolve(q.get("app"))));
                case "/close" -> {
                    KafkaStreams app = apps.remove(q.get("app"));
                    if (app == null) {
                        throw new IllegalArgumentException("no application " + q.get("app"));
                    }
                    if (!app.close(Duration.ofSeconds(60))) {
                        throw new IllegalStateException("application " + q.get("app") + " did not close within 60 s");
                    }
                    // Closed, its stores are flushed: the bytes RocksDB holds on disk, then the local state is deleted.
                    long bytes = bytesUnder(stateRoot.resolve(q.get("app")));
                    app.cleanUp();
                    yield Long.toString(bytes);
                }
                case "/exit" -> {
                    exit.countDown();
                    yield "exiting";
                }
                case "/ping" -> "pong";
                default -> throw new IllegalArgumentException("unknown path " + exchange.getRequestURI().getPath());
            };
        } catch (RuntimeException e) {
            e.printStackTrace();
            status = 500;
            body = e.toString();
        }
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    private KafkaStreams app(Map<String, String> q) {
        KafkaStreams app = apps.get(q.get("app"));
        if (app == null) {
            throw new IllegalArgumentException("no application " + q.get("app"));
        }
        return app;
    }

    /**
     * Builds (not starts) application {@code app}: {@code left}, {@code right}, {@code out} topics, {@code threads},
     * {@code after}, {@code grace} (ms), optionally the main consumer's {@code session.timeout.ms} and
     * {@code heartbeat.interval.ms}. The same application id again (after a restart of this JVM) finds its state
     * directory and its committed offsets, as a restarted instance does.
     */
    private String prepare(Map<String, String> q) {
        String id = q.get("app");
        Duration after = Duration.ofMillis(Long.parseLong(q.get("after")));
        Duration grace = Duration.ofMillis(Long.parseLong(q.get("grace")));
        StreamsBuilder builder = new StreamsBuilder();
        // Only the payload goes into the window stores (no repartition: the key is unchanged).
        KStream<String, JsonNode> queries = builder.stream(q.get("left"), Consumed.with(Serdes.String(), JSON_SERDE))
                .mapValues(v -> v.get("payload"));
        KStream<String, JsonNode> clicks = builder.stream(q.get("right"), Consumed.with(Serdes.String(), JSON_SERDE))
                .mapValues(v -> v.get("payload"));
        queries.join(clicks, KStreamsWindowJoinPeer::joined,
                        JoinWindows.ofTimeDifferenceAndGrace(after, grace).before(Duration.ZERO),
                        StreamJoined.with(Serdes.String(), JSON_SERDE, JSON_SERDE))
                .to(q.get("out"), Produced.with(Serdes.String(), JSON_SERDE));

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, id);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(q.get("threads")));
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateRoot.toString());
        // A single broker: the internal topics (the two stores' changelogs) get one replica.
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        // The consumer group timeouts the harness's Connect worker gives its sink consumers, so that after a
        // SIGKILL both rejoin their groups alike (Kafka Streams' own default session timeout is 45 s).
        props.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), q.getOrDefault("session.timeout.ms", "45000"));
        props.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG),
                q.getOrDefault("heartbeat.interval.ms", "3000"));
        KafkaStreams app = new KafkaStreams(builder.build(), props);
        app.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        if (apps.putIfAbsent(id, app) != null) {
            app.close();
            throw new IllegalArgumentException("application " + id + " exists already");
        }
        return "prepared";
    }

    /** Both payloads' fields, prefixed as ours prefixes its columns. */
    private static JsonNode joined(JsonNode query, JsonNode click) {
        ObjectNode out = JSON.createObjectNode();
        for (Iterator<Map.Entry<String, JsonNode>> it = query.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            out.set("left_" + f.getKey(), f.getValue());
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = click.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            out.set("right_" + f.getKey(), f.getValue());
        }
        return out;
    }

    static long bytesUnder(Path dir) {
        if (!Files.exists(dir)) {
            return 0;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    return 0; // a file RocksDB removed meanwhile
                }
            }).sum();
        } catch (IOException | UncheckedIOException e) {
            throw new IllegalStateException("cannot size " + dir, e);
        }
    }

    private static Map<String, String> query(String raw) {
        Map<String, String> q = new HashMap<>();
        if (raw != null) {
            for (String kv : raw.split("&")) {
                int eq = kv.indexOf('=');
                if (eq > 0) {
                    q.put(URLDecoder.decode(kv.substring(0, eq), StandardCharsets.UTF_8),
                            URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8));
                }
            }
        }
        return q;
    }

    private static final class JsonSerializer implements Serializer<JsonNode> {
        @Override
        public byte[] serialize(String topic, JsonNode data) {
            try {
                return data == null ? null : JSON.writeValueAsBytes(data);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    private static final class JsonDeserializer implements Deserializer<JsonNode> {
        @Override
        public JsonNode deserialize(String topic, byte[] data) {
            try {
                return data == null ? null : JSON.readTree(data);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
