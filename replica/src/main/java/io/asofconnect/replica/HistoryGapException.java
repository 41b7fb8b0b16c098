package io.asofconnect.replica;

import org.apache.kafka.connect.errors.ConnectException;

/** The stored history cannot be continued and {@code replica.on.gap=FAIL}: the replica stops, it does not retry. */
final class HistoryGapException extends ConnectException {
    private static final long serialVersionUID = 1L;

    HistoryGapException(String message) {
        super(message);
    }
}
