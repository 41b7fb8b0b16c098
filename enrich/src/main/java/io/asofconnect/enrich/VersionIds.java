package io.asofconnect.enrich;

import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;

/**
 * {@link VersionId#toString()}'s text ({@code <validFrom>@<LSN hi>/<LSN lo>[#ordinal]}) written in one
 * pass into one buffer: every enriched record carries it, and the id's own form builds a {@link VersionId},
 * two hex strings, their upper-cased copies and three concatenations for it. Pinned to that form by a test.
 */
final class VersionIds {
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private VersionIds() {
    }

    static String format(Version version) {
        return format(version.validFrom(), version.position());
    }

    static String format(long validFrom, SourcePosition position) {
        StringBuilder b = new StringBuilder(40);
        b.append(validFrom).append('@');
        long lsn = position.lsn();
        appendHex(b, lsn >>> 32);
        b.append('/');
        appendHex(b, lsn & 0xFFFFFFFFL);
        if (position.ordinal() != 0) {
            b.append('#').append(position.ordinal());
        }
        return b.toString();
    }

    /** {@code Long.toHexString(v).toUpperCase()} for {@code 0 <= v < 2^32}: no leading zeros, "0" for zero. */
    private static void appendHex(StringBuilder b, long v) {
        int shift = 28;
        while (shift > 0 && ((v >>> shift) & 0xF) == 0) {
            shift -= 4;
        }
        for (; shift >= 0; shift -= 4) {
            b.append(HEX[(int) ((v >>> shift) & 0xF)]);
        }
    }
}
