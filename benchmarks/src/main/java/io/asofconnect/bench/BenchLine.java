package io.asofconnect.bench;

import java.util.Locale;

/**
 * The one machine-readable line each harness prints per row, {@code bench <row> ours=<n> peer=<n> ratio=<n>},
 * which {@code benchmarks/run-all} collects; and the same shape for the lines without a goal ({@code scale},
 * {@code footprint}). A figure that is not a positive finite number is refused, so no row can print a fake one.
 */
public final class BenchLine {
    private BenchLine() {
    }

    /** A row whose ratio is ours / peer (rates: higher is better). */
    public static void rate(String row, double ours, double peer) {
        print("bench " + row, ours, peer, ours / peer);
    }

    /** A row whose figures are durations: ratio is peer / ours (restart-vs-rebuild). */
    public static void duration(String row, double oursSeconds, double peerSeconds) {
        print("bench " + row, oursSeconds, peerSeconds, peerSeconds / oursSeconds);
    }

    /** A point of a cost-growth ladder, ratio ours / peer, without a goal. */
    public static void scale(String row, long versions, double ours, double peer) {
        print("scale " + row + " versions=" + versions, ours, peer, ours / peer);
    }

    /** Bytes per version of one store (ours or the peer's), without a goal. */
    public static void footprint(String side, String what, long versions, long bytes) {
        if (versions <= 0 || bytes < 0) {
            throw new IllegalStateException("footprint " + side + " " + what + ": " + bytes + " bytes over " + versions + " versions");
        }
        System.out.printf(Locale.ROOT, "footprint %s %s bytes=%d versions=%d per_version=%.1f%n",
                side, what, bytes, versions, (double) bytes / versions);
    }

    private static void print(String prefix, double ours, double peer, double ratio) {
        if (!(ours > 0) || !(peer > 0) || Double.isInfinite(ours) || Double.isInfinite(peer)) {
            throw new IllegalStateException(prefix + ": refusing to print a figure that is not a positive number (ours "
                    + ours + ", peer " + peer + ")");
        }
        System.out.printf(Locale.ROOT, "%s ours=%.3f peer=%.3f ratio=%.4f%n", prefix, ours, peer, ratio);
    }
}
