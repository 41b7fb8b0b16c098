package io.asofconnect.tablejoin;

import io.asofconnect.common.lookup.Change;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.VersionId;

import java.util.Base64;
import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.connect.errors.ConnectException;

/**
 * Where the view's changelog stands: the record with this offset is the {@code record}-th record of the view
 * changes that {@code candidate} gave in {@code phase} of {@code change} ({@link DeltaJoin}). Stored by Connect with the
 * record, in the same transaction under exactly-once source support; a restart re-expands {@code change} from that
 * candidate and skips what was written.
 */
record ViewOffset(Change change, int phase, byte[] candidate, int record) {
    private static final String VALID_FROM = "valid_from";
    private static final String LSN = "lsn";
    private static final String ORDINAL = "ordinal";
    private static final String TABLE = "table";
    private static final String KEY = "key";
    private static final String PHASE = "phase";
    private static final String CANDIDATE = "candidate";
    private static final String RECORD = "record";

    Map<String, Object> toMap() {
        Map<String, Object> m = new HashMap<>();
        m.put(VALID_FROM, change.id().validFrom());
        m.put(LSN, change.id().position().lsn());
        m.put(ORDINAL, change.id().position().ordinal());
        m.put(TABLE, change.table());
        m.put(KEY, Base64.getEncoder().encodeToString(change.key().encoded()));
        m.put(PHASE, phase);
        m.put(CANDIDATE, candidate == null ? "" : Base64.getEncoder().encodeToString(candidate));
        m.put(RECORD, record);
        return m;
    }

    /** The offset Connect stored, or null for none. */
    static ViewOffset fromMap(Map<String, ?> m, String viewName) {
        if (m == null || m.isEmpty()) {
            return null;
        }
        try {
            VersionId id = new VersionId(number(m, VALID_FROM).longValue(),
                    new SourcePosition(number(m, LSN).longValue(), number(m, ORDINAL).intValue()));
            Change change = new Change(id, (String) m.get(TABLE), RowKey.decode(Base64.getDecoder().decode((String) m.get(KEY))));
            String candidate = (String) m.get(CANDIDATE);
            return new ViewOffset(change, number(m, PHASE).intValue(),
                    candidate == null || candidate.isEmpty() ? null : Base64.getDecoder().decode(candidate),
                    number(m, RECORD).intValue());
        } catch (RuntimeException e) {
            throw new ConnectException("the stored offset of view " + viewName + " cannot be read (" + e.getMessage()
                    + "); it was not written by this connector. Reset the connector's offsets (DELETE /connectors/"
                    + viewName + "/offsets while it is stopped) and clear the view's target to rebuild it", e);
        }
    }

    private static Number number(Map<String, ?> m, String field) {
        Object v = m.get(field);
        if (!(v instanceof Number n)) {
            throw new IllegalArgumentException("field '" + field + "' is " + v);
        }
        return n;
    }
}
