package io.asofconnect.windowjoin;

/** What happens to a record whose event time is behind its partition's watermark. */
public enum LatePolicy {
    /** Counted, logged, recorded in the late table; it joins nothing. */
    DROP,
    /** As DROP, and sent to the dead letter queue through the errant record reporter. */
    DLQ,
    /** The task fails, naming the record; nothing after it is written. */
    FAIL
}
