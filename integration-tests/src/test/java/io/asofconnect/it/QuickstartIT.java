package io.asofconnect.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.asofconnect.it.harness.ManagedProcess;
import io.asofconnect.it.harness.PrintLogsOnFailure;
import io.asofconnect.it.quickstart.Quickstart;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs the quickstart as a test, so the README's first command and the standalone config examples it uses
 * cannot rot: it fails if any event is missing, doubled or joined with the wrong plan.
 */
@ExtendWith(PrintLogsOnFailure.class)
class QuickstartIT {

    @Test
    void quickstartRunsEndToEndAndStopsItsProcesses() throws Exception {
        Quickstart.main(new String[0]);
        assertThat(ManagedProcess.aliveCount()).as("broker and worker processes left running").isZero();
    }
}
