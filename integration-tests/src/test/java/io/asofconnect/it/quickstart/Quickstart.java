package io.asofconnect.it.quickstart;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.HashMap;

import io.asofconnect.it.PageViews;
import io.asofconnect.it.harness.ConfigTemplates;
import io.asofconnect.it.harness.ConnectWorker;
import io.asofconnect.it.harness.FreePorts;
import io.asofconnect.it.harness.JsonEvents;
import io.asofconnect.it.harness.KafkaBroker;
import io.asofconnect.it.harness.ManagedProcess;
import io.asofconnect.it.harness.PluginInstaller;
import io.asofconnect.it.harness.PostgresServer;
import io.asofconnect.it.harness.TestPaths;

/**
 * The whole pipeline on one machine, on real parts: an embedded Postgres with a demo {@code users} table, a
 * single-node KRaft broker and a standalone Connect worker (each its own process) loading the plugin from
 * plugin.path, configured from {@code config-examples/standalone/}. Page views are produced while plans change;
 * the printout shows each event joined with the plan its user had at the event's time. Everything is stopped
 * at the end (and by a shutdown hook on Ctrl-C).
 */
public final class Quickstart {

    private static final String CONNECTOR = "page-views-enriched";

    private Quickstart() {
    }

    public static void main(String[] args) throws Exception {
        Path work = TestPaths.workDir("quickstart");
        say("Working directory: " + work + " (all logs are there)");
        PostgresServer postgres = null;
        KafkaBroker broker = null;
        ConnectWorker worker = null;
        try {
            Path plugins = PluginInstaller.install(TestPaths.pluginZip(), work.resolve("plugins"));
            say("Plugin unzipped into plugin.path " + plugins);
            postgres = PostgresServer.start(work, "postgres");
            say("Postgres running on 127.0.0.1:" + postgres.port());
            broker = KafkaBroker.start(work);
            say("Kafka (KRaft, single node) running on " + broker.bootstrapServers());

            PageViews demo = new PageViews(postgres, broker, 3, "demo");
            demo.createSourceAndTopic(1);
            say("Created database demo_shop with table users(id, plan), every user on plan 'free', and topic "
                    + demo.topic());

            int restPort = FreePorts.pick();
            Map<String, String> values = new HashMap<>(demo.placeholders(work.resolve("secrets")));
            values.put("BOOTSTRAP_SERVERS", broker.bootstrapServers());
            values.put("WORK_DIR", work.toString());
            values.put("REST_PORT", Integer.toString(restPort));
            values.put("PLUGIN_PATH", plugins.toString());
            Path config = work.resolve("config");
            Path workerProps = ConfigTemplates.renderTo("standalone/worker.properties", values, config);
            Path connector = ConfigTemplates.renderTo("standalone/page-views-enriched-sink.json", values, config);
            worker = ConnectWorker.standalone("connect-standalone", work, workerProps, restPort, List.of(connector));
            worker.rest().awaitRunning(CONNECTOR, 1, Duration.ofSeconds(120));
            say("Connect worker running at " + worker.restUrl() + " with connector " + CONNECTOR);

            try (JsonEvents producer = new JsonEvents(broker)) {
                demo.produceEvents(producer, 3);
                demo.produceInterleaved(producer, 4, 3);
            }
            say("Produced " + demo.producedCount() + " page views while changing plans; waiting for the sink...");
            demo.awaitAndVerifyTarget(Duration.ofSeconds(120));

            say("");
            say("Table demo_warehouse.page_views_enriched, in time order with the plan changes:");
            demo.timeline().forEach(line -> say("  " + line));
            say("");
            say("Each event carries the plan its user had when the event happened: events before a CHANGE");
            say("show the old plan, events after it the new one. Every event was written exactly once.");
        } catch (Exception | Error e) {
            say("Quickstart failed: " + e);
            ManagedProcess.printTails(System.out, 40);
            throw e;
        } finally {
            say("Stopping the worker, Kafka and Postgres...");
            if (worker != null) {
                worker.close();
            }
            if (broker != null) {
                broker.close();
            }
            if (postgres != null) {
                postgres.close();
            }
            say("Done.");
        }
    }

    private static void say(String line) {
        System.out.println(line);
    }
}
