package io.asofconnect.writer;

/** What the writer counts; its host publishes it (the sink's {@code SinkMetrics}). */
public interface WriterMetrics {
    /** Records nothing: for one-off uses such as changing the offsets by hand. */
    WriterMetrics NONE = new WriterMetrics() {
        @Override
        public void committed(int records, int written, long nanos) {
        }

        @Override
        public void fenced() {
        }
    };

    /** A flush committed {@code records} records, {@code written} of them as rows (the others wrote nothing), in {@code nanos}. */
    void committed(int records, int written, long nanos);

    /** A commit, or a look at the offsets rows after a failure, found a partition taken over by another task. */
    void fenced();
}
