package io.asofconnect.writer;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Every SQL statement the writer runs, for Postgres. Identifiers are always double-quoted (inner quotes
 * doubled), so a name with {@code "}, {@code ;}, {@code --}, spaces or non-ASCII is one identifier and
 * nothing else; every value is a bind parameter.
 *
 * <p>Offsets table layout: one row per (connector, topic, partition) with {@code next_offset}, the next
 * Kafka offset to write ({@code -1} until the first commit), and {@code epoch}, raised by every task that
 * takes the partition over. A flush updates its rows only while they still carry its epoch, so a task
 * that lost the partition (a zombie) cannot commit. Rows are never deleted, not even by an offsets reset
 * (which sets {@code next_offset} back to {@code -1}): the epochs of a partition only ever rise, so an
 * epoch once handed out is never handed out again. A row is created only by the first claim or offset
 * change of its partition, at epoch 1, which no task can have held before.
 */
public final class PostgresDialect {
    /** Postgres truncates longer identifiers silently, which could make two names one. */
    static final int MAX_IDENTIFIER_BYTES = 63;

    private final String schema;

    PostgresDialect(String schema) {
        this.schema = schema;
    }

    /** Why a name cannot be a Postgres identifier, or null when it can. */
    public static String identifierProblem(String name) {
        if (name.isEmpty()) {
            return "must not be empty";
        }
        if (name.indexOf('\0') >= 0) {
            return "must not contain a NUL character";
        }
        int bytes = name.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_IDENTIFIER_BYTES) {
            return "is " + bytes + " bytes long; Postgres identifiers hold at most " + MAX_IDENTIFIER_BYTES + " bytes";
        }
        return null;
    }

    public static String quote(String identifier) {
        String problem = identifierProblem(identifier);
        if (problem != null) {
            throw new IllegalArgumentException("identifier " + problem);
        }
        return '"' + identifier.replace("\"", "\"\"") + '"';
    }

    /**
     * A table as statements name it: {@code "schema"."name"}, each part {@link #quote quoted}. Also what
     * {@code to_regclass} and the DDL lock take; for a host's {@link SideTables}, in {@link WriterSettings#tableSchema}.
     */
    public static String qualified(String schema, String name) {
        return quote(schema) + '.' + quote(name);
    }

    String table(String name) {
        return qualified(schema, name);
    }

    String insert(RowChange.Shape s) {
        List<String> all = new ArrayList<>(s.keyNames());
        all.addAll(s.valueNames());
        String cols = all.stream().map(PostgresDialect::quote).collect(Collectors.joining(", "));
        String params = all.stream().map(c -> "?").collect(Collectors.joining(", "));
        StringBuilder sql = new StringBuilder("INSERT INTO ").append(table(s.table())).append(" (").append(cols)
                .append(") VALUES (").append(params).append(')');
        if (s.op() == RowChange.Op.UPSERT) {
            sql.append(" ON CONFLICT (").append(s.keyNames().stream().map(PostgresDialect::quote).collect(Collectors.joining(", "))).append(')');
            if (s.valueNames().isEmpty()) {
                sql.append(" DO NOTHING");
            } else {
                sql.append(" DO UPDATE SET ").append(s.valueNames().stream().map(PostgresDialect::quote)
                        .map(c -> c + " = EXCLUDED." + c).collect(Collectors.joining(", ")));
            }
        }
        return sql.toString();
    }

    String delete(RowChange.Shape s) {
        return "DELETE FROM " + table(s.table()) + " WHERE "
                + s.keyNames().stream().map(c -> quote(c) + " = ?").collect(Collectors.joining(" AND "));
    }

    String statement(RowChange.Shape s) {
        return s.op() == RowChange.Op.DELETE ? delete(s) : insert(s);
    }

    String createTable(String table, List<Column> keyColumns, List<Column> valueColumns) {
        List<String> defs = new ArrayList<>();
        for (Column c : keyColumns) {
            defs.add(quote(c.name()) + ' ' + c.kind().postgresType() + " NOT NULL");
        }
        for (Column c : valueColumns) {
            defs.add(quote(c.name()) + ' ' + c.kind().postgresType() + (c.optional() ? "" : " NOT NULL"));
        }
        if (!keyColumns.isEmpty()) {
            defs.add("PRIMARY KEY (" + keyColumns.stream().map(c -> quote(c.name())).collect(Collectors.joining(", ")) + ')');
        }
        return "CREATE TABLE IF NOT EXISTS " + table(table) + " (" + String.join(", ", defs) + ')';
    }

    /** Added columns are nullable: existing rows have no value for them. */
    String addColumn(String table, Column c) {
        return "ALTER TABLE " + table(table) + " ADD COLUMN IF NOT EXISTS " + quote(c.name()) + ' ' + c.kind().postgresType();
    }

    /** Parameters: schema, table. */
    String columnNamesQuery() {
        return "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ?";
    }

    /** Serialises concurrent DDL by several tasks on one table name; parameter: a lock key text. */
    static String ddlLock() {
        return "SELECT pg_advisory_xact_lock(hashtext(?))";
    }

    String schema() {
        return schema;
    }

    /** Sets statement_timeout for the rest of the transaction; parameter: milliseconds, as text. */
    static String localStatementTimeout() {
        return "SELECT set_config('statement_timeout', ?, true)";
    }

    // ---- offsets table ----

    /** Parameter: the table, {@link #qualified}; returns whether it exists. */
    static String tableExists() {
        return "SELECT to_regclass(?) IS NOT NULL";
    }

    String createOffsetsTable(String offsetsTable) {
        return "CREATE TABLE IF NOT EXISTS " + table(offsetsTable) + " ("
                + "\"connector_name\" text NOT NULL, \"topic\" text NOT NULL, \"kafka_partition\" integer NOT NULL, "
                + "\"next_offset\" bigint NOT NULL, \"epoch\" bigint NOT NULL, \"updated_at\" timestamptz NOT NULL DEFAULT now(), "
                + "PRIMARY KEY (\"connector_name\", \"topic\", \"kafka_partition\"))";
    }

    /** Takes a new epoch, creating the row if absent; parameters: connector, topic, partition; returns epoch, next_offset. */
    String claimEpoch(String offsetsTable) {
        String t = table(offsetsTable);
        return "INSERT INTO " + t + " AS o (\"connector_name\", \"topic\", \"kafka_partition\", \"next_offset\", \"epoch\")"
                + " VALUES (?, ?, ?, -1, 1)"
                + " ON CONFLICT (\"connector_name\", \"topic\", \"kafka_partition\")"
                + " DO UPDATE SET \"epoch\" = o.\"epoch\" + 1, \"updated_at\" = now()"
                + " RETURNING \"epoch\", \"next_offset\"";
    }

    /** Parameters: next_offset, connector, topic, partition, epoch; 0 rows updated means fenced. */
    String advanceOffset(String offsetsTable) {
        return "UPDATE " + table(offsetsTable) + " SET \"next_offset\" = ?, \"updated_at\" = now()"
                + " WHERE \"connector_name\" = ? AND \"topic\" = ? AND \"kafka_partition\" = ? AND \"epoch\" = ?";
    }

    /**
     * Sets a partition's next offset by hand (REST PATCH .../offsets), raising its epoch so that no task still
     * holding the old one can commit; parameters: connector, topic, partition, next_offset.
     */
    String setOffset(String offsetsTable) {
        return "INSERT INTO " + table(offsetsTable) + " AS o (\"connector_name\", \"topic\", \"kafka_partition\", \"next_offset\", \"epoch\")"
                + " VALUES (?, ?, ?, ?, 1)"
                + " ON CONFLICT (\"connector_name\", \"topic\", \"kafka_partition\")"
                + " DO UPDATE SET \"next_offset\" = EXCLUDED.\"next_offset\", \"epoch\" = o.\"epoch\" + 1, \"updated_at\" = now()";
    }

    /**
     * Resets a partition (REST DELETE .../offsets) to "no offset yet", raising its epoch like {@link #setOffset};
     * the row stays, so its epoch keeps rising. A partition without a row has nothing to reset. Parameters:
     * connector, topic, partition.
     */
    String resetOffset(String offsetsTable) {
        return "UPDATE " + table(offsetsTable) + " SET \"next_offset\" = -1, \"epoch\" = \"epoch\" + 1, \"updated_at\" = now()"
                + " WHERE \"connector_name\" = ? AND \"topic\" = ? AND \"kafka_partition\" = ?";
    }

    /** Parameters: connector, topic, partition; returns epoch, next_offset. */
    String readOffset(String offsetsTable) {
        return "SELECT \"epoch\", \"next_offset\" FROM " + table(offsetsTable)
                + " WHERE \"connector_name\" = ? AND \"topic\" = ? AND \"kafka_partition\" = ?";
    }
}
