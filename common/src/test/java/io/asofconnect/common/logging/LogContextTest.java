package io.asofconnect.common.logging;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The parsing of Connect's context values. Reading them from the MDC needs the worker's logging backend
 * (slf4j-simple, used by these tests, keeps no MDC); the integration tests check that on real workers.
 */
class LogContextTest {

    @Test
    void aTaskThreadNamesConnectorAndTask() {
        // The exact form Connect's LoggingContext.forTask writes; a connector name may itself hold a bar.
        assertThat(LogContext.describe("[page-views|sink|task-3] ")).isEqualTo("connector page-views|sink task 3");
    }

    @Test
    void aConnectorThreadNamesTheConnector() {
        assertThat(LogContext.describe("[page-views|worker] ")).isEqualTo("connector page-views");
    }

    @Test
    void anOffsetsThreadSaysSo() {
        assertThat(LogContext.describe("[page-views|offsets-0] ")).isEqualTo("connector page-views task 0 (offsets)");
    }

    @Test
    void offConnectsThreadsTheFallbackNamesTheConnector() {
        assertThat(LogContext.current("page-views")).isEqualTo("connector page-views");
        assertThat(LogContext.current()).isNull();
        assertThat(LogContext.describe("not connect's")).isNull();
        assertThat(LogContext.describe(null)).isNull();
    }
}
