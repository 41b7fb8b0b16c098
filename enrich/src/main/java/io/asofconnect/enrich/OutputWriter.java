package io.asofconnect.enrich;

import io.asofconnect.enrich.EnrichConfig.OutputMode;
import io.asofconnect.common.lookup.Version;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a joined version into a record value. Schema'd values ({@link Struct}) and schemaless ones
 * ({@link Map}) take separate paths, since one needs a derived schema and the other plain, converter-
 * friendly Java values.
 */
final class OutputWriter {
    private final EnrichConfig config;
    private final OutputSchemas schemas;
    private final WritePlans plans;
    private final OutputMode mode;
    private final String outputField;
    private final String prefix;
    private final List<String> columns;
    private final boolean metadata;

    OutputWriter(EnrichConfig config, OutputSchemas schemas) {
        this.config = config;
        this.schemas = schemas;
        this.plans = new WritePlans(this::compile);
        this.mode = config.outputMode();
        this.outputField = config.outputField();
        this.prefix = config.outputPrefix();
        this.columns = config.columns();
        this.metadata = config.versionMetadata();
    }

    /**
     * The enriched value; {@code version} null means a miss (nulls written, in the shape of the latest hit's
     * row when there was one, so that hits and misses share an output schema).
     */
    Struct applyWithSchema(Schema schema, Struct value, Version version) {
        Schema rowSchema;
        if (version == null) {
            rowSchema = schemas.rowSchemaForMiss();
        } else {
            rowSchema = version.row().schema();
            schemas.rememberRow(rowSchema);
        }
        return plans.planFor(schema, rowSchema).write(value, version);
    }

    private WritePlan compile(Schema input, Schema row) {
        return new WritePlan(input, row, schemas.outputSchema(input, row), schemas.columnsOf(row), config);
    }

    /** Releases the plans; the derived schemas are {@link OutputSchemas#clear}ed by their owner. */
    void clear() {
        plans.clear();
    }

    /** The enriched value; {@code version} null means a miss (nulls written). */
    Map<String, Object> applySchemaless(Map<?, ?> value, Version version) {
        Map<String, Object> result = new LinkedHashMap<>();
        value.forEach((k, v) -> result.put(String.valueOf(k), v));
        Map<String, Object> enrichment = version == null ? null : rowAsMap(version);
        if (mode == OutputMode.NESTED) {
            requireFree(result, outputField, EnrichConfig.OUTPUT_FIELD);
            result.put(outputField, enrichment);
        } else {
            List<String> names = new ArrayList<>(enrichment != null ? enrichment.keySet() : columns);
            if (enrichment == null && metadata) {
                names.add(EnrichConfig.VALID_FROM_COLUMN);
                names.add(EnrichConfig.VERSION_COLUMN);
            }
            for (String name : names) {
                requireFree(result, prefix + name, EnrichConfig.OUTPUT_PREFIX);
                result.put(prefix + name, enrichment == null ? null : enrichment.get(name));
            }
        }
        return result;
    }

    private Map<String, Object> rowAsMap(Version version) {
        Struct row = version.row();
        Map<String, Object> m = new LinkedHashMap<>();
        List<String> cols = columns.isEmpty() ? schemas.columnsOf(row.schema()) : columns;
        for (String col : cols) {
            m.put(col, row.schema().field(col) == null ? null : plain(row.getWithoutDefault(col)));
        }
        if (metadata) {
            if (m.containsKey(EnrichConfig.VALID_FROM_COLUMN) || m.containsKey(EnrichConfig.VERSION_COLUMN)) {
                throw new DataException("the table has a column named " + EnrichConfig.VALID_FROM_COLUMN + " or "
                        + EnrichConfig.VERSION_COLUMN + ", which " + EnrichConfig.VERSION_METADATA + "=true also writes;"
                        + " set " + EnrichConfig.VERSION_METADATA + "=false or leave the column out of " + EnrichConfig.COLUMNS);
            }
            m.put(EnrichConfig.VALID_FROM_COLUMN, version.validFrom());
            m.put(EnrichConfig.VERSION_COLUMN, VersionIds.format(version));
        }
        return m;
    }

    /** Schemaless converters cannot serialise a Struct: nested structs become maps, recursively. */
    private static Object plain(Object v) {
        if (v instanceof Struct s) {
            Map<String, Object> m = new LinkedHashMap<>();
            for (Field f : s.schema().fields()) {
                m.put(f.name(), plain(s.getWithoutDefault(f.name())));
            }
            return m;
        }
        if (v instanceof List<?> l) {
            List<Object> out = new ArrayList<>(l.size());
            l.forEach(e -> out.add(plain(e)));
            return out;
        }
        if (v instanceof Map<?, ?> map) {
            Map<Object, Object> out = new LinkedHashMap<>();
            map.forEach((k, e) -> out.put(plain(k), plain(e)));
            return out;
        }
        return v;
    }

    private static void requireFree(Map<String, Object> value, String name, String key) {
        if (value.containsKey(name)) {
            throw new DataException("the record value already has a field named " + name + ", which the enrichment"
                    + " would write; choose another " + key);
        }
    }
}
