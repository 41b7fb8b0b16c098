package io.asofconnect.writer;

import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.util.Set;

/**
 * Sorts database errors by what the sink must do about them, and describes them without data: server
 * messages may quote a record's values ("invalid input syntax for type integer: ..."), so descriptions
 * carry only the SQLState and the names of the table, column and constraint involved.
 */
public final class SqlErrors {
    public enum Kind {
        /** Retry the whole transaction on a new connection: the database or the network was briefly unavailable. */
        TRANSIENT,
        /** This record can never be written as it is: divert it or stop. */
        RECORD,
        /** Neither: a missing table, a missing privilege, a bug; the task must stop with an actionable message. */
        FATAL
    }

    private static final Set<String> TRANSIENT_STATES = Set.of(
            "57P01", // admin_shutdown
            "57P02", // crash_shutdown
            "57P03", // cannot_connect_now
            "57014", // query_canceled (statement_timeout)
            "25P03", // idle_in_transaction_session_timeout: this session was frozen too long; reconcile tells if it was fenced
            "55P03", // lock_not_available (lock_timeout)
            "40001", // serialization_failure
            "40P01", // deadlock_detected
            "53300", // too_many_connections
            "53200", // out_of_memory
            "58030"); // io_error

    private static final Set<String> RECORD_STATES = Set.of(
            "42804", // datatype_mismatch: a value's type does not fit its column
            "21000"); // cardinality_violation

    private SqlErrors() {
    }

    public static Kind classify(SQLException e) {
        String state = state(e);
        if (state == null) {
            return e instanceof SQLTransientException || e instanceof SQLRecoverableException ? Kind.TRANSIENT : Kind.FATAL;
        }
        if (state.startsWith("08") || TRANSIENT_STATES.contains(state)) {
            return Kind.TRANSIENT;
        }
        if (state.startsWith("22") || state.startsWith("23") || RECORD_STATES.contains(state)) {
            return Kind.RECORD;
        }
        return Kind.FATAL;
    }

    /** The first SQLState in the exception chain (a batch failure carries the real error as its next exception). */
    public static String state(SQLException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException s) {
                if (s.getSQLState() != null) {
                    return s.getSQLState();
                }
                SQLException next = s.getNextException();
                if (next != null && next.getSQLState() != null) {
                    return next.getSQLState();
                }
            }
        }
        return null;
    }

    /** "SQLState 23505, constraint "t_pkey", table "t"": enough to act on, no values. */
    public static String describe(SQLException e) {
        StringBuilder sb = new StringBuilder("SQLState ").append(state(e));
        ServerErrorMessage m = serverMessage(e);
        if (m != null) {
            append(sb, "table", m.getTable());
            append(sb, "column", m.getColumn());
            append(sb, "constraint", m.getConstraint());
            append(sb, "type", m.getDatatype());
        }
        return sb.toString();
    }

    /**
     * The server's primary message when the error cannot carry a record's values (connection, privilege,
     * missing objects); null for data errors.
     */
    public static String safeMessage(SQLException e) {
        String state = state(e);
        if (state == null || state.startsWith("22") || state.startsWith("23") || RECORD_STATES.contains(state)) {
            return null;
        }
        ServerErrorMessage m = serverMessage(e);
        return m != null ? m.getMessage() : e.getMessage();
    }

    private static ServerErrorMessage serverMessage(SQLException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof PSQLException p && p.getServerErrorMessage() != null) {
                return p.getServerErrorMessage();
            }
            if (t instanceof SQLException s && s.getNextException() instanceof PSQLException p && p.getServerErrorMessage() != null) {
                return p.getServerErrorMessage();
            }
        }
        return null;
    }

    private static void append(StringBuilder sb, String what, String name) {
        if (name != null && !name.isEmpty()) {
            sb.append(", ").append(what).append(" \"").append(name).append('"');
        }
    }
}
