package io.asofconnect.windowjoin;

import io.asofconnect.writer.PartitionState;
import io.asofconnect.writer.PostgresDialect;
import io.asofconnect.writer.SideTables;
import org.apache.kafka.common.TopicPartition;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The join's two tables beside the writer's offsets table, written in the same transaction as the rows and offsets.
 *
 * <p>The <b>held table</b> has, per connector and input partition, the lowest offset a rebuild must replay from and
 * the partition's watermark. A second table rather than a column of the offsets table: the sink's users granted
 * SELECT, INSERT, UPDATE on that table, not ALTER, and its rows mean nothing to the sink. Fencing is not weakened:
 * the held row is written before the writer's epoch-checked offset update, so a fenced flush rolls both back.
 *
 * <p>The <b>late table</b> records each record refused as late, so that a replay refuses exactly those again: that
 * decision rested on records before the held offset and on idle advances, which a replay does not see. Rows below
 * the held offset can never be replayed again and are deleted.
 */
final class HeldTables implements SideTables {
    /** What a claim read for one partition. */
    record Held(long lowOffset, Long watermark, Set<Long> late) {
        static final Held NONE = new Held(-1L, null, Set.of());
    }

    private final String connectorName;
    private final String held;
    private final String late;
    private final Function<TopicPartition, SideState> sides;
    private final Map<TopicPartition, Held> lastRead = new HashMap<>();
    /** Per partition, how many of its pending late records the last {@link #write} wrote. */
    private final Map<SideState, Integer> written = new HashMap<>();

    HeldTables(String schema, String heldTable, String lateTable, String connectorName, Function<TopicPartition, SideState> sides) {
        this.connectorName = connectorName;
        this.held = PostgresDialect.qualified(schema, heldTable);
        this.late = PostgresDialect.qualified(schema, lateTable);
        this.sides = sides;
    }

    @Override
    public void ensure(Connection c) throws SQLException {
        SideTables.createIfAbsent(c, held, "CREATE TABLE IF NOT EXISTS " + held + " (connector_name text NOT NULL,"
                + " topic text NOT NULL, kafka_partition int NOT NULL, low_offset bigint NOT NULL, watermark bigint,"
                + " PRIMARY KEY (connector_name, topic, kafka_partition))");
        SideTables.createIfAbsent(c, late, "CREATE TABLE IF NOT EXISTS " + late + " (connector_name text NOT NULL,"
                + " topic text NOT NULL, kafka_partition int NOT NULL, kafka_offset bigint NOT NULL, event_time bigint NOT NULL,"
                + " watermark bigint NOT NULL, PRIMARY KEY (connector_name, topic, kafka_partition, kafka_offset))");
    }

    @Override
    public void read(Connection c, Collection<TopicPartition> partitions) throws SQLException {
        try (PreparedStatement h = c.prepareStatement("SELECT low_offset, watermark FROM " + held
                + " WHERE connector_name = ? AND topic = ? AND kafka_partition = ?");
             PreparedStatement l = c.prepareStatement("SELECT kafka_offset FROM " + late
                     + " WHERE connector_name = ? AND topic = ? AND kafka_partition = ? AND kafka_offset >= ?")) {
            for (TopicPartition tp : partitions) {
                bind(h, tp);
                Held row = Held.NONE;
                try (ResultSet rs = h.executeQuery()) {
                    if (rs.next()) {
                        long low = rs.getLong(1);
                        long w = rs.getLong(2);
                        row = new Held(low, rs.wasNull() ? null : w, Set.of());
                    }
                }
                if (row != Held.NONE) {
                    bind(l, tp);
                    l.setLong(4, row.lowOffset());
                    Set<Long> offsets = new HashSet<>();
                    try (ResultSet rs = l.executeQuery()) {
                        while (rs.next()) {
                            offsets.add(rs.getLong(1));
                        }
                    }
                    row = new Held(row.lowOffset(), row.watermark(), offsets);
                }
                lastRead.put(tp, row);
            }
        }
    }

    /** What the last claim or reconcile read for {@code tp}; {@link Held#NONE} before the join first committed it. */
    Held lastRead(TopicPartition tp) {
        return lastRead.getOrDefault(tp, Held.NONE);
    }

    @Override
    public void write(Connection c, List<PartitionState> dirty) throws SQLException {
        written.clear();
        try (PreparedStatement up = c.prepareStatement("INSERT INTO " + held + " (connector_name, topic, kafka_partition,"
                + " low_offset, watermark) VALUES (?, ?, ?, ?, ?) ON CONFLICT (connector_name, topic, kafka_partition)"
                + " DO UPDATE SET low_offset = EXCLUDED.low_offset, watermark = EXCLUDED.watermark");
             PreparedStatement ins = c.prepareStatement("INSERT INTO " + late + " (connector_name, topic, kafka_partition,"
                     + " kafka_offset, event_time, watermark) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
             PreparedStatement prune = c.prepareStatement("DELETE FROM " + late
                     + " WHERE connector_name = ? AND topic = ? AND kafka_partition = ? AND kafka_offset < ?")) {
            boolean anyLate = false;
            for (PartitionState p : dirty) {
                SideState s = sides.apply(p.partition());
                if (s == null) {
                    continue;
                }
                long low = s.heldOffset();
                bind(up, p.partition());
                up.setLong(4, low);
                if (s.watermark == Long.MIN_VALUE) {
                    up.setNull(5, Types.BIGINT);
                } else {
                    up.setLong(5, s.watermark);
                }
                up.addBatch();
                for (SideState.Late r : s.pendingLate) {
                    bind(ins, p.partition());
                    ins.setLong(4, r.offset());
                    ins.setLong(5, r.time());
                    ins.setLong(6, r.watermark());
                    ins.addBatch();
                    anyLate = true;
                }
                written.put(s, s.pendingLate.size());
                bind(prune, p.partition());
                prune.setLong(4, low);
                prune.addBatch();
            }
            up.executeBatch();
            if (anyLate) {
                ins.executeBatch();
            }
            prune.executeBatch();
        }
    }

    /** The flush that called {@link #write} committed: the late records it wrote are recorded. */
    void committed() {
        written.forEach((s, n) -> s.pendingLate.subList(0, Math.min(n, s.pendingLate.size())).clear());
        written.clear();
    }

    @Override
    public void overwrite(Connection c, Map<TopicPartition, Long> nextOffsets) throws SQLException {
        try (PreparedStatement del = c.prepareStatement("DELETE FROM " + held
                + " WHERE connector_name = ? AND topic = ? AND kafka_partition = ?");
             PreparedStatement up = c.prepareStatement("INSERT INTO " + held + " (connector_name, topic, kafka_partition,"
                     + " low_offset, watermark) VALUES (?, ?, ?, ?, NULL) ON CONFLICT (connector_name, topic, kafka_partition)"
                     + " DO UPDATE SET low_offset = EXCLUDED.low_offset, watermark = NULL");
             PreparedStatement clear = c.prepareStatement("DELETE FROM " + late
                     + " WHERE connector_name = ? AND topic = ? AND kafka_partition = ?")) {
            for (Map.Entry<TopicPartition, Long> e : nextOffsets.entrySet()) {
                if (e.getValue() == null) {
                    bind(del, e.getKey());
                    del.executeUpdate();
                } else {
                    bind(up, e.getKey());
                    up.setLong(4, e.getValue());
                    up.executeUpdate();
                }
                bind(clear, e.getKey());
                clear.executeUpdate();
            }
        }
    }

    private void bind(PreparedStatement ps, TopicPartition tp) throws SQLException {
        ps.setString(1, connectorName);
        ps.setString(2, tp.topic());
        ps.setInt(3, tp.partition());
    }
}
