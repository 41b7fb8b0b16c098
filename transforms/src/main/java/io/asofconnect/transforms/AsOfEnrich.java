package io.asofconnect.transforms;

import io.asofconnect.enrich.EnrichConfig;
import io.asofconnect.enrich.EnrichmentEngine;
import io.asofconnect.enrich.EnrichmentMetrics;
import io.asofconnect.enrich.Enrichment;
import io.asofconnect.enrich.ReplicaLease;
import io.asofconnect.replica.ReplicaMetrics;
import io.asofconnect.metrics.Metered;
import io.asofconnect.replica.config.ReplicaConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.metrics.Monitorable;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.components.Versioned;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.transforms.Transformation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Enriches each record's value with the version of a replicated row that was valid at the record's event
 * time (an as-of join), read from a local, versioned CDC replica of a Postgres table.
 *
 * <p>The record is enriched only once the replica's watermark has passed its event time, so the result is
 * the same on every replay; the transform waits at most {@code enrich.lateness.wait.ms} for that and then
 * applies {@code enrich.on.late}. Problems with a record are {@code DataException}s, so Connect's
 * {@code errors.tolerance} and dead letter queue apply. Records with a null value (tombstones) pass
 * unchanged. Works in front of any connector, source or sink. Only the value changes; the key is a
 * possible source of the join key ({@code enrich.key.source=KEY}), never a target.
 *
 * <p>Example: a Debezium source connector capturing {@code public.orders}, each order enriched with its
 * customer as of the order's commit:
 * <pre>
 * transforms=customer
 * transforms.customer.type=io.asofconnect.transforms.AsOfEnrich
 * transforms.customer.enrich.table=public.customers
 * transforms.customer.enrich.key.fields=after.customer_id
 * transforms.customer.enrich.time.source=FIELD
 * transforms.customer.enrich.time.field=source.ts_ms
 * transforms.customer.enrich.on.missing.key=PASS_THROUGH   # deletes have no 'after'
 * transforms.customer.replica.name=customers
 * transforms.customer.replica.database.hostname=...         # and the other replica.* keys
 * </pre>
 * Each order value then carries a {@code customers} struct with the customer's columns and
 * {@code __valid_from}/{@code __version}, naming the version that was joined.
 */
public class AsOfEnrich<R extends ConnectRecord<R>> implements Transformation<R>, Versioned, Monitorable {
    private static final Logger LOG = LoggerFactory.getLogger(AsOfEnrich.class);

    public static final String OVERVIEW_DOC = "Enriches the record value with the row of a replicated Postgres table"
            + " that was valid at the record's event time (as-of join), deterministically on replay."
            + "<p/>Use the concrete transformation type <code>" + AsOfEnrich.class.getName() + "</code>.";

    /** The {@code enrich.*} options and the {@code replica.*} options of the replica to read from. */
    public static final ConfigDef CONFIG_DEF = EnrichConfig.addTo(ReplicaConfig.addTo(new ConfigDef()));

    private final Function<Map<String, ?>, ReplicaLease> replicas;
    private Enrichment enrichment;
    /** How much earlier than "now" a record's read-your-writes bound is taken; see {@link #readYourWritesSlackMs}. */
    private long receiptSlackMs;

    public AsOfEnrich() {
        this(ReplicaLease::fromRegistry);
    }

    /** With another source of replicas, for tests that feed a real version store by hand. */
    AsOfEnrich(Function<Map<String, ?>, ReplicaLease> replicas) {
        this.replicas = replicas;
    }

    @Override
    public void configure(Map<String, ?> props) {
        this.enrichment = Enrichment.start(props, replicas, EnrichmentMetrics.unpublished());
        EnrichConfig config = enrichment.config();
        this.receiptSlackMs = readYourWritesSlackMs(props);
        LOG.info("AsOfEnrich configured: table {}, mode {}, output {}, read-your-writes {}", config.table(), config.mode(),
                config.outputMode(), config.readYourWrites() ? "for changes committed " + receiptSlackMs + " ms before a record" : "off");
    }

    /**
     * A transform is handed one record at a time and must answer it before it gets the next, so it cannot hold
     * a batch behind one wait as the sink does. Its watermark trails the source's clock by up to one probe
     * interval plus the safety margin; a bound of "now" would make every record wait for the next probe, one
     * record per interval. So the transform's bound trails "now" by that much: it sees every change committed
     * at least that long before a record reached it, waits only while the replica is further behind (after a
     * restart, a rebuild, a stall), and holds no record longer than a sink would. The sink-hosted enrichment
     * has no such slack.
     */
    static long readYourWritesSlackMs(Map<String, ?> props) {
        return replicaLong(props, ReplicaConfig.WATERMARK_INTERVAL_MS) + replicaLong(props, ReplicaConfig.WATERMARK_SAFETY_MARGIN_MS);
    }

    /** One {@code replica.*} number, or its default; the replica itself validated it when it was acquired. */
    private static long replicaLong(Map<String, ?> props, String name) {
        ConfigDef.ConfigKey key = CONFIG_DEF.configKeys().get(name);
        Object value = props.containsKey(name) ? props.get(name) : key.defaultValue;
        return (Long) ConfigDef.parseType(name, value, key.type);
    }

    /** Connect hands the transform its metrics after {@link #configure}: lookups counted from then on are published. */
    @Override
    public void withPluginMetrics(PluginMetrics metrics) {
        if (enrichment != null) {
            Metered metered = new Metered(metrics);
            EnrichmentMetrics counted = new EnrichmentMetrics(metered);
            enrichment.lookup().countInto(counted);
            // The transform holds a record by blocking on it: at most one per task, for as long as it waits.
            enrichment.engine().countWaitsInto(counted);
            counted.heldRecords(enrichment.engine()::waiting);
            ReplicaMetrics.publish(metered, enrichment.lease().lookup());
        }
    }

    @Override
    public R apply(R record) {
        EnrichmentEngine engine = enrichment.engine();
        return engine.enrichBlocking(record, engine.receipts().nowLess(receiptSlackMs));
    }

    @Override
    public ConfigDef config() {
        return CONFIG_DEF;
    }

    @Override
    public void close() {
        if (enrichment != null) {
            enrichment.close();
            enrichment = null;
            LOG.info("AsOfEnrich closed");
        }
    }

    @Override
    public String version() {
        return Optional.ofNullable(AsOfEnrich.class.getPackage().getImplementationVersion()).orElse("unknown");
    }
}
