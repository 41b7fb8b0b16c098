package io.asofconnect.tablejoin;

import io.asofconnect.common.config.PluginVersion;
import io.asofconnect.common.lookup.ChangeFeed;
import io.asofconnect.common.lookup.Watermark;
import io.asofconnect.metrics.HostMetrics;
import io.asofconnect.metrics.Metered;
import io.asofconnect.replica.ReplicaHandle;
import io.asofconnect.replica.ReplicaRegistry;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The view's one task: reads both tables' changes from the replica's feed in order, up to the watermark, expands
 * each by the delta rule ({@link DeltaJoin}) and returns the view's changes, at most {@code view.batch.size} per poll.
 * Each record carries the exact point it stands for ({@link ViewOffset}); under exactly-once source support Connect
 * commits it with the records, so a restart resumes after the last record written, even inside one change's fan-out.
 *
 * <p>The last record of each group of changes sharing one valid-from (one commit-time millisecond, so whole source
 * transactions) carries the header {@value #GROUP_END_HEADER} = {@code "true"}: a sink that commits only up to such a
 * record (the JDBC sink's {@code changelog.group.header}) never shows a reader half of a source transaction.
 */
public class TableJoinSourceTask extends SourceTask {
    /** The header on the last record of a group ({@link ViewChangelog}); its value is the string "true". */
    public static final String GROUP_END_HEADER = "asof.view.group.end";
    private static final Logger log = LoggerFactory.getLogger(TableJoinSourceTask.class);

    private TableJoinConfig config;
    private ReplicaHandle replica;
    private Watermark watermark;
    private ViewChangelog changelog;
    private Map<String, String> partition;
    /** Records handed to Connect; read by the metrics reporter's thread. */
    private volatile long records;

    @Override
    public String version() {
        return PluginVersion.VERSION;
    }

    @Override
    public void start(Map<String, String> props) {
        config = new TableJoinConfig(props);
        ViewDefinition view = config.view();
        replica = ReplicaRegistry.acquire(ReplicaSettings.forView(props, view));
        ChangeFeed feed = replica.feed();
        watermark = replica.watermark();
        partition = Map.of("view", config.viewName());
        ViewOffset offset = ViewOffset.fromMap(context.offsetStorageReader().offset(partition), config.viewName());
        if (offset != null && offset.change().id().validFrom() < feed.historyStart()) {
            log.warn("View {}: its position (valid from {}) is before the replica's retained history (from {}); changes"
                            + " pruned since may be missing from the view. Raise replica.history.retention.ms above the view's"
                            + " longest stop, and rebuild the view (reset the connector's offsets and clear its target)",
                    config.viewName(), offset.change().id().validFrom(), feed.historyStart());
        }
        DeltaJoin join = new DeltaJoin(view, feed, new ViewRows(view, "io.asofconnect.view." + safe(config.viewName())));
        changelog = new ViewChangelog(view, feed, join, new ChangelogEncoder(view.encoding(), config.opField(), config.viewName()),
                config.viewName(), offset);
        Metered metered = new Metered(HostMetrics.orLocal(() -> context == null ? null : context.pluginMetrics()));
        ViewChangelog c = changelog;
        metered.gauge("view-source-changes", "source changes read from the replica's feed and joined", c::changesRead);
        metered.gauge("view-changes", "view changes produced (inserts, updates, deletes of view rows)", c::viewChanges);
        metered.gauge("view-fanout-current", "view changes produced so far by the source change being joined: the progress of a large fan-out", c::currentFanOut);
        metered.gauge("view-lag-ms", "the replica's watermark minus the commit time of the last change read: how far the view is behind",
                () -> c.lastValidFrom() == Long.MIN_VALUE || watermark.get() == Long.MIN_VALUE ? 0 : Math.max(0, watermark.get() - c.lastValidFrom()));
        metered.gauge("view-records", "records handed to Connect", () -> records);
        log.info("Started view {} ({} {} JOIN {} into topic {} as {}){}", config.viewName(), view.left().table(), view.type(),
                view.right().table(), config.topic(), view.encoding(), offset == null ? ", from the beginning"
                        : ", resuming at change " + offset.change().id() + " after its record " + offset.record() + " of phase "
                        + offset.phase() + (offset.candidate() == null ? "" : " for a probed row"));
    }

    private static String safe(String name) {
        return name.replaceAll("[^A-Za-z0-9_]", "_");
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        long w = watermark.get();
        // MIN_VALUE: the replica has not caught up once, and even its snapshot may be incomplete.
        List<ViewChangelog.Entry> entries;
        try {
            entries = w == Long.MIN_VALUE ? List.of() : changelog.next(w, config.batchSize());
        } catch (RetriableException e) {
            // Connect would poll again, but the changelog has moved past this call's records: a retry would lose them.
            throw new ConnectException("view " + config.viewName() + ": the replica could not be read (" + e.getMessage()
                    + "); restart the task, which resumes after its last committed record", e);
        }
        if (entries.isEmpty()) {
            watermark.await(w == Long.MIN_VALUE ? Long.MIN_VALUE + 1 : w + 1, Duration.ofMillis(config.pollIntervalMs()));
            return null;
        }
        records += entries.size();
        List<SourceRecord> out = new ArrayList<>(entries.size());
        for (ViewChangelog.Entry e : entries) {
            ChangelogEncoder.Encoded r = e.record();
            SourceRecord record = new SourceRecord(partition, e.offset().toMap(), config.topic(), null, r.key().schema(), r.key(),
                    r.valueSchema(), r.value());
            if (e.groupEnd()) {
                record.headers().addString(GROUP_END_HEADER, "true");
            }
            out.add(record);
        }
        return out;
    }

    @Override
    public void stop() {
        if (replica != null) {
            replica.close();
            replica = null;
        }
        if (config != null) {
            log.info("Stopped view {}", config.viewName());
        }
    }
}
