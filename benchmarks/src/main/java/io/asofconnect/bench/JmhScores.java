package io.asofconnect.bench;

import org.openjdk.jmh.results.RunResult;

import java.util.Collection;

/** Picks one benchmark method's score out of a JMH run; a missing one fails rather than reading as zero. */
final class JmhScores {
    private JmhScores() {
    }

    static double score(Collection<RunResult> results, String method, int keys) {
        return results.stream()
                .filter(r -> r.getParams().getBenchmark().endsWith("." + method))
                .filter(r -> keys == Integer.parseInt(r.getParams().getParam("keys")))
                .mapToDouble(r -> r.getPrimaryResult().getScore())
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no result for " + method + " at keys=" + keys + "; was it excluded?"));
    }
}
