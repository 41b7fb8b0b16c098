package io.asofconnect.transforms;

import io.asofconnect.enrich.Fixtures;
import io.asofconnect.replica.config.ReplicaConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The production wiring: configure goes through the worker's replica registry. */
class AsOfEnrichRegistryTest {

    @Test
    void namingAReplicaThatDoesNotRunAndIsNotDefinedFailsConfigure() {
        AsOfEnrich<SinkRecord> t = new AsOfEnrich<>();
        Map<String, Object> props = Fixtures.props(ReplicaConfig.NAME, "not-running-" + System.nanoTime());
        assertThatThrownBy(() -> t.configure(props)).isInstanceOf(ConfigException.class).hasMessageContaining(ReplicaConfig.NAME);
        t.close();
    }
}
