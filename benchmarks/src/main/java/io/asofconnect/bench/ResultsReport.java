package io.asofconnect.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns the lines {@code benchmarks/run-all} collected ({@code bench}, {@code scale}, {@code footprint}, see
 * {@link BenchLine}) into {@code summary.md} (each row against its issue's goal (7; 10 for the window join; 11 for the table join's view), a missing row marked as not
 * measured) and {@code chart.svg} (per row, its ratio as a fraction of its goal; the line at 1 is the goal).
 *
 * <p>Run: {@code java -cp benchmarks.jar io.asofconnect.bench.ResultsReport <lines file> <output dir> <title> <load>}.
 */
public final class ResultsReport {
    /** A row's goal: its ratio at least {@code ratio}, and (where set) its own figure inside a bound. */
    record Goal(double ratio, String text, Double oursAtLeast, Double oursAtMost) {
        boolean met(double ours, double r) {
            return r >= ratio && (oursAtLeast == null || ours >= oursAtLeast) && (oursAtMost == null || ours <= oursAtMost);
        }
    }

    static final Map<String, Goal> GOALS = new LinkedHashMap<>();

    static {
        GOALS.put("ingest-snapshot", new Goal(0.85, ">= 0.85", null, null));
        GOALS.put("ingest-streaming", new Goal(0.85, ">= 0.85", null, null));
        GOALS.put("lookup-1t", new Goal(10, ">= 10x and >= 1,000,000 lookups/s", 1_000_000.0, null));
        GOALS.put("transform", new Goal(0.25, ">= 0.25", null, null));
        GOALS.put("e2e-hosted-vs-plain", new Goal(0.9, ">= 0.9", null, null));
        GOALS.put("e2e-vs-debezium", new Goal(1.5, ">= 1.5", null, null));
        GOALS.put("e2e-vs-copy", new Goal(0.6, ">= 0.6", null, null));
        GOALS.put("restart-vs-rebuild", new Goal(10, "rebuild / restart >= 10, restart <= 5 s", null, 5.0));
        // Issue 10: the window join's joined rows/s against Kafka Streams' KStream#join, both exactly once.
        GOALS.put("window-join-vs-kstreams", new Goal(1.5, ">= 1.5", null, null));
        // Issue 11: the table join's source changes/s against REFRESH MATERIALIZED VIEW after each batch (at 1,000,000 rows).
        GOALS.put("view-vs-sql-recompute", new Goal(10, ">= 10 (at 1,000,000 timeline rows)", null, null));
    }

    private static final Pattern BENCH = Pattern.compile("bench (\\S+) ours=(\\S+) peer=(\\S+) ratio=(\\S+)");
    private static final Pattern SCALE = Pattern.compile("scale (\\S+) versions=(\\d+) ours=(\\S+) peer=(\\S+) ratio=(\\S+)");
    private static final Pattern FOOTPRINT = Pattern.compile("footprint (\\S+) (\\S+) bytes=(\\d+) versions=(\\d+) per_version=(\\S+)");

    record Row(double ours, double peer, double ratio) {
    }

    private ResultsReport() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 4) {
            throw new IllegalArgumentException("arguments: <lines file> <output dir> <title> <load>");
        }
        List<String> lines = Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8);
        Path out = Files.createDirectories(Path.of(args[1]));
        Map<String, Row> rows = new LinkedHashMap<>();
        // Keyed by row and versions, so the ladder reads in growing size whatever order the runs took.
        java.util.TreeMap<String, String> scale = new java.util.TreeMap<>();
        List<String> footprint = new ArrayList<>();
        for (String line : lines) {
            Matcher m;
            if ((m = BENCH.matcher(line)).matches()) {
                rows.put(m.group(1), new Row(num(m.group(2)), num(m.group(3)), num(m.group(4))));
            } else if ((m = SCALE.matcher(line)).matches()) {
                scale.put(String.format(Locale.ROOT, "%s %019d", m.group(1), Long.parseLong(m.group(2))), String.format(Locale.ROOT, "| %s | %,d | %,.0f | %,.0f | %.3f |", m.group(1),
                        Long.parseLong(m.group(2)), num(m.group(3)), num(m.group(4)), num(m.group(5))));
            } else if ((m = FOOTPRINT.matcher(line)).matches()) {
                footprint.add(String.format(Locale.ROOT, "| %s | %s | %,d | %,d | %.1f |", m.group(1), m.group(2),
                        Long.parseLong(m.group(3)), Long.parseLong(m.group(4)), num(m.group(5))));
            }
        }
        Files.writeString(out.resolve("summary.md"), summary(args[2], args[3], rows, List.copyOf(scale.values()), footprint), StandardCharsets.UTF_8);
        Files.writeString(out.resolve("chart.svg"), chart(args[2], rows), StandardCharsets.UTF_8);
        System.out.println("wrote " + out.resolve("summary.md") + " and " + out.resolve("chart.svg"));
    }

    private static double num(String s) {
        return Double.parseDouble(s);
    }

    static String summary(String title, String load, Map<String, Row> rows, List<String> scale, List<String> footprint) {
        StringBuilder md = new StringBuilder("# ").append(title).append("\n\n").append("Machine load: ").append(load).append("\n\n");
        md.append("| row | ours | peer | ratio | goal | met |\n|---|---|---|---|---|---|\n");
        GOALS.forEach((name, goal) -> {
            Row r = rows.get(name);
            if (r == null) {
                md.append("| ").append(name).append(" | not measured (the row failed: see the log) | | | ").append(goal.text()).append(" | no |\n");
            } else {
                md.append(String.format(Locale.ROOT, "| %s | %,.3f | %,.3f | %.3f | %s | %s |%n", name, r.ours(), r.peer(),
                        r.ratio(), goal.text(), goal.met(r.ours(), r.ratio()) ? "yes" : "no"));
            }
        });
        md.append("\nrestart-vs-rebuild: ours = restart seconds, peer = rebuild seconds, ratio = peer / ours; every other row: rates, ratio = ours / peer.\n");
        if (!scale.isEmpty()) {
            md.append("\n## Cost growth (no goal)\n\n| row | versions | ours /s | peer /s | ratio |\n|---|---|---|---|---|\n");
            scale.forEach(l -> md.append(l).append('\n'));
        }
        if (!footprint.isEmpty()) {
            md.append("\n## Footprint per version (no goal; Kafka Streams' heap excludes RocksDB's native memory)\n\n"
                    + "| store | what | bytes | versions | bytes per version |\n|---|---|---|---|---|\n");
            footprint.forEach(l -> md.append(l).append('\n'));
        }
        return md.toString();
    }

    /** Horizontal bars of ratio / goal, capped at 2 (the label keeps the real ratio); the goal is the line at 1. */
    static String chart(String title, Map<String, Row> rows) {
        int left = 170;
        int width = 400;
        int barHeight = 22;
        int top = 40;
        int height = top + GOALS.size() * (barHeight + 8) + 30;
        StringBuilder svg = new StringBuilder(String.format(Locale.ROOT,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">%n",
                left + width + 160, height));
        svg.append(String.format(Locale.ROOT, "<text x=\"10\" y=\"20\" font-size=\"14\">%s: ratio / goal per row (line = goal)</text>%n", escape(title)));
        int y = top;
        for (Map.Entry<String, Goal> e : GOALS.entrySet()) {
            Row r = rows.get(e.getKey());
            svg.append(String.format(Locale.ROOT, "<text x=\"10\" y=\"%d\">%s</text>%n", y + 15, e.getKey()));
            if (r == null) {
                svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" fill=\"#a00\">not measured</text>%n", left + 4, y + 15));
            } else {
                double fraction = Math.min(2, r.ratio() / e.getValue().ratio());
                String colour = e.getValue().met(r.ours(), r.ratio()) ? "#3a7" : "#d64";
                svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>%n",
                        left, y, fraction * width / 2, barHeight, colour));
                svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\">%.3f (goal %s)</text>%n",
                        left + fraction * width / 2 + 4, y + 15, r.ratio(), escape(e.getValue().text())));
            }
            y += barHeight + 8;
        }
        svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\" stroke-dasharray=\"4 3\"/>%n",
                left + width / 2, top - 5, left + width / 2, y));
        return svg.append("</svg>\n").toString();
    }

    private static String escape(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
