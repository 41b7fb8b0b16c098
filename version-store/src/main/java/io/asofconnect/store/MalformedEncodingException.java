package io.asofconnect.store;

/** Stored bytes do not decode; the store turns this into a {@link StoreCorruptedException} naming its file. */
final class MalformedEncodingException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    MalformedEncodingException(String message) {
        super(message);
    }

    MalformedEncodingException(String message, Throwable cause) {
        super(message, cause);
    }
}
