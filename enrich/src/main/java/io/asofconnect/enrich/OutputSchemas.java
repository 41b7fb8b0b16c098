package io.asofconnect.enrich;

import io.asofconnect.enrich.EnrichConfig.OutputMode;
import org.apache.kafka.common.cache.Cache;
import org.apache.kafka.common.cache.LRUCache;
import org.apache.kafka.common.cache.SynchronizedCache;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.errors.DataException;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Derives the output value schema from the input value schema and the joined version's row schema, and
 * caches it: a record stream reuses a handful of (input, row) shape pairs, so deriving once per pair keeps
 * the per-record cost to a lookup and hands out the same schema instance, which converters and schema
 * registries compare by identity first. The cache is bounded, so a table whose shape keeps changing
 * cannot grow it without limit.
 *
 * <p>A miss under {@code enrich.on.miss=NULL} has no row to take the column shape from, yet a sink that
 * creates its table from the first record needs hits and misses to share one shape. So the last row schema
 * seen in a hit is remembered ({@link #rowSchemaForMiss}; one per engine, i.e. per table, so bounded) and a
 * miss is written with it: the nested struct null, or the flattened columns null. Only before the first hit
 * is the row schema {@code null}, and then only the version-metadata columns (if enabled) are added.
 */
final class OutputSchemas {
    /** Distinct (input, row) shape pairs kept; a few per topic and table version is the common case. */
    static final int CACHE_SIZE = 256;

    private record ShapePair(Schema input, Schema row) {
    }

    private final OutputMode mode;
    private final String outputField;
    private final String prefix;
    private final List<String> columns;
    private final boolean metadata;
    private volatile Cache<ShapePair, Schema> cache = newCache();
    /** The row schema of the latest hit; a single reference, replaced (never grown) when the table's shape changes. */
    private volatile Schema lastRowSchema;

    OutputSchemas(EnrichConfig config) {
        this.mode = config.outputMode();
        this.outputField = config.outputField();
        this.prefix = config.outputPrefix();
        this.columns = config.columns();
        this.metadata = config.versionMetadata();
    }

    private static Cache<ShapePair, Schema> newCache() {
        return new SynchronizedCache<>(new LRUCache<>(CACHE_SIZE));
    }

    /** The output value schema for {@code input} enriched from a version shaped {@code row} (null: shape unknown). */
    Schema outputSchema(Schema input, Schema row) {
        Cache<ShapePair, Schema> c = cache;
        ShapePair key = new ShapePair(input, row);
        Schema out = c.get(key);
        if (out == null) {
            out = derive(input, row);
            c.put(key, out);
        }
        return out;
    }

    /** The row's columns to copy, in output order: the configured subset that this shape has, or all. */
    List<String> columnsOf(Schema row) {
        if (row == null) {
            return List.of();
        }
        if (columns.isEmpty()) {
            return row.fields().stream().map(Field::name).toList();
        }
        return columns.stream().filter(c -> row.field(c) != null).toList();
    }

    /** Remembers the row schema of a hit, for later misses. */
    void rememberRow(Schema row) {
        if (row != lastRowSchema) { // the same shape hit after hit: spare a volatile write per record
            lastRowSchema = row;
        }
    }

    /** The row schema to give a miss: the latest hit's, or null when there has been none yet. */
    Schema rowSchemaForMiss() {
        return lastRowSchema;
    }

    void clear() {
        cache = newCache();
        lastRowSchema = null;
    }

    private Schema derive(Schema input, Schema row) {
        SchemaBuilder b = SchemaBuilder.struct().name(input.name()).version(input.version()).doc(input.doc());
        if (input.isOptional()) {
            b.optional();
        }
        Map<String, String> params = input.parameters();
        if (params != null) {
            b.parameters(params);
        }
        for (Field f : input.fields()) {
            b.field(f.name(), f.schema());
        }
        List<Field> enrichment = enrichmentFields(row);
        if (mode == OutputMode.NESTED) {
            requireFree(input, outputField, EnrichConfig.OUTPUT_FIELD);
            SchemaBuilder nested = SchemaBuilder.struct().optional();
            for (Field f : enrichment) {
                nested.field(f.name(), f.schema());
            }
            b.field(outputField, nested.build());
        } else {
            for (Field f : enrichment) {
                String name = prefix + f.name();
                requireFree(input, name, EnrichConfig.OUTPUT_PREFIX);
                b.field(name, f.schema());
            }
        }
        return b.build();
    }

    /** The enrichment's columns, unprefixed, each made optional and stripped of defaults. */
    private List<Field> enrichmentFields(Schema row) {
        List<Field> out = new ArrayList<>();
        for (String col : columnsOf(row)) {
            if (metadata && (col.equals(EnrichConfig.VALID_FROM_COLUMN) || col.equals(EnrichConfig.VERSION_COLUMN))) {
                throw new DataException("the table has a column named " + col + ", which " + EnrichConfig.VERSION_METADATA
                        + "=true also writes; set " + EnrichConfig.VERSION_METADATA + "=false or leave the column out of "
                        + EnrichConfig.COLUMNS);
            }
            out.add(new Field(col, out.size(), optional(row.field(col).schema())));
        }
        if (metadata) {
            out.add(new Field(EnrichConfig.VALID_FROM_COLUMN, out.size(), Schema.OPTIONAL_INT64_SCHEMA));
            out.add(new Field(EnrichConfig.VERSION_COLUMN, out.size(), Schema.OPTIONAL_STRING_SCHEMA));
        }
        return out;
    }

    private static void requireFree(Schema input, String name, String key) {
        if (input.field(name) != null) {
            throw new DataException("the record value already has a field named " + name + ", which the enrichment"
                    + " would write; choose another " + key);
        }
    }

    /**
     * The same type, name, version, doc and parameters (so logical types such as Decimal and
     * io.debezium.time.* keep their meaning), but optional and without a default: a miss must read as null,
     * not as the column's default.
     */
    static Schema optional(Schema s) {
        if (s.isOptional() && s.defaultValue() == null) {
            return s;
        }
        SchemaBuilder b = switch (s.type()) {
            case ARRAY -> SchemaBuilder.array(s.valueSchema());
            case MAP -> SchemaBuilder.map(s.keySchema(), s.valueSchema());
            case STRUCT -> {
                SchemaBuilder sb = SchemaBuilder.struct();
                s.fields().forEach(f -> sb.field(f.name(), f.schema()));
                yield sb;
            }
            default -> new SchemaBuilder(s.type());
        };
        b.name(s.name()).version(s.version()).doc(s.doc()).optional();
        if (s.parameters() != null) {
            b.parameters(s.parameters());
        }
        return b.build();
    }
}
