package io.asofconnect.common.data;

/** Stored bytes do not decode; the store turns this into a {@code StoreCorruptedException} naming its file. */
public final class MalformedEncodingException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public MalformedEncodingException(String message) {
        super(message);
    }

    public MalformedEncodingException(String message, Throwable cause) {
        super(message, cause);
    }
}
