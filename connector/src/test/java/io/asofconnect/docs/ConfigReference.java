package io.asofconnect.docs;

import io.asofconnect.tablejoin.TableJoinConfig;
import io.asofconnect.windowjoin.JoinConfig;

import io.asofconnect.sink.config.ExactlyOnceJdbcSinkConfig;
import io.asofconnect.transforms.AsOfEnrich;
import org.apache.kafka.common.config.ConfigDef;

import java.util.Map;
import java.util.function.Predicate;

/**
 * Renders the option reference in {@code docs/configuration.md} from the ConfigDefs themselves, so the
 * documented names, types and defaults cannot drift from the code.
 */
final class ConfigReference {
    private ConfigReference() {
    }

    static String render() {
        StringBuilder out = new StringBuilder();
        out.append("# Configuration reference\n\n")
                .append("Generated from the plugin's `ConfigDef`s by `connector/src/test/java/io/asofconnect/docs/ConfigReference.java`;\n")
                .append("`ConfigReferenceTest` fails when this file and the code disagree. Regenerate with\n")
                .append("`mvn -B -pl connector -am test -Dtest=ConfigReferenceTest -Dsurefire.failIfNoSpecifiedTests=false -Dasof.docs.write=true`.\n\n");
        ConfigDef sink = ExactlyOnceJdbcSinkConfig.CONFIG_DEF;
        ConfigDef transform = new AsOfEnrich<>().config();
        section(out, "Sink: `io.asofconnect.sink.ExactlyOnceJdbcSinkConnector`",
                "Keys of the sink itself. The sink also accepts every `enrich.*` and `replica.*` key below, to host the enrichment.",
                sink, k -> !k.startsWith("enrich.") && !k.startsWith("replica."));
        section(out, "Enrichment: `io.asofconnect.transforms.AsOfEnrich` and the sink",
                "The same keys configure the transform (prefix them with `transforms.<alias>.` in connector JSON) and the enrichment hosted in the sink.",
                transform, k -> k.startsWith("enrich."));
        section(out, "Replica: `replica.*` (transform and sink)",
                "Defines the versioned replica of the dimension tables, or names one another connector in the same worker already defines "
                        + "(then `replica.name` alone is enough). Any Debezium Postgres connector property may be passed as `replica.debezium.<property>`.",
                transform, k -> k.startsWith("replica."));
        section(out, "Window join: `io.asofconnect.windowjoin.WindowJoinSinkConnector`",
                "The stream-stream join. Its writer keys (`connection.*`, `table.schema`, `schema.evolution`, `batch.*`, "
                        + "`offsets.table.name`, `max.retries`, `retry.backoff.ms`) mean what they mean for the sink.",
                JoinConfig.CONFIG_DEF, k -> true);
        section(out, "Table join: `io.asofconnect.tablejoin.TableJoinSourceConnector`",
                "The table-table join: a view over two tables the replica captures, published as a changelog. It also takes the "
                        + "`replica.*` keys above (the replica that captures both tables); it sets `replica.indexes` and "
                        + "`replica.feed.tables` itself from the view.",
                TableJoinConfig.CONFIG_DEF, k -> !k.startsWith("replica."));
        return out.toString();
    }

    private static void section(StringBuilder out, String title, String intro, ConfigDef def, Predicate<String> include) {
        out.append("## ").append(title).append("\n\n").append(intro).append("\n\n")
                .append("| key | type | default | valid values | importance | description |\n")
                .append("|---|---|---|---|---|---|\n");
        for (Map.Entry<String, ConfigDef.ConfigKey> e : def.configKeys().entrySet()) {
            if (!include.test(e.getKey())) {
                continue;
            }
            ConfigDef.ConfigKey k = e.getValue();
            out.append("| `").append(k.name).append("` | ")
                    .append(k.type.name().toLowerCase()).append(" | ")
                    .append(defaultText(k)).append(" | ")
                    .append(k.validator == null ? "" : cell(k.validator.toString())).append(" | ")
                    .append(k.importance.name().toLowerCase()).append(" | ")
                    .append(cell(k.documentation)).append(" |\n");
        }
        out.append('\n');
    }

    private static String defaultText(ConfigDef.ConfigKey k) {
        if (!k.hasDefault()) {
            return "(required)";
        }
        if (k.defaultValue == null) {
            return "null";
        }
        String s = ConfigDef.convertToString(k.defaultValue, k.type);
        return s.isEmpty() ? "\"\"" : "`" + cell(s) + "`";
    }

    private static String cell(String s) {
        return s == null ? "" : s.replace("|", "\\|").replace("\n", " ");
    }
}
