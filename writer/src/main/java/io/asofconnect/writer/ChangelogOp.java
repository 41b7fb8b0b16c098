package io.asofconnect.writer;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * The operations of a retract changelog, by the short strings Flink's {@code RowKind} prints: each change of a keyed
 * table is a delete of the old row and an insert of the new one. Applied by key, {@link #deletes} tells which.
 * A {@link #UPDATE_BEFORE} is always followed by its {@link #UPDATE_AFTER} for the same key.
 */
public enum ChangelogOp {
    INSERT("+I", false),
    UPDATE_BEFORE("-U", true),
    UPDATE_AFTER("+U", false),
    DELETE("-D", true);

    /** For messages: every short string and what it does. */
    static final String EXPECTED = "+I or +U (upsert the row the record key names) or -U or -D (delete it)";

    private final String shortString;
    private final boolean deletes;

    ChangelogOp(String shortString, boolean deletes) {
        this.shortString = shortString;
        this.deletes = deletes;
    }

    public String shortString() {
        return shortString;
    }

    /** Whether the operation removes the key's row; otherwise the record's row replaces it. */
    public boolean deletes() {
        return deletes;
    }

    /** The operation printed as {@code s}, or null when it is none of them. */
    public static ChangelogOp of(String s) {
        for (ChangelogOp op : values()) {
            if (op.shortString.equals(s)) {
                return op;
            }
        }
        return null;
    }

    /** "+I, -U, +U, -D". */
    public static String shortStrings() {
        return Arrays.stream(values()).map(ChangelogOp::shortString).collect(Collectors.joining(", "));
    }
}
