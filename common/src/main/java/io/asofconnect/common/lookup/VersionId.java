package io.asofconnect.common.lookup;

/**
 * Names one version of one row: its valid-from instant and the source position that produced it.
 * Written into enriched records so that a replay can be audited, and accepted back by
 * {@link VersionLookup#exact} for events that name the version they want.
 */
public record VersionId(long validFrom, SourcePosition position) {
    /** {@code <validFrom>@<position>}, e.g. {@code 1733080000000@0/16B3748}. */
    @Override
    public String toString() {
        return validFrom + "@" + position;
    }

    /** Parses {@link #toString()}'s form. */
    public static VersionId parse(String text) {
        int at = text.indexOf('@');
        if (at < 0) {
            throw new IllegalArgumentException("not a version id: expected <validFromMillis>@<lsn>, e.g. 1733080000000@0/16B3748");
        }
        return new VersionId(Long.parseLong(text.substring(0, at).trim()), SourcePosition.parse(text.substring(at + 1)));
    }
}
