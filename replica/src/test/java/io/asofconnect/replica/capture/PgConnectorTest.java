package io.asofconnect.replica.capture;

import io.asofconnect.replica.config.ReplicaConfig;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;

class PgConnectorTest {
    private static Map<String, Object> config() {
        Map<String, Object> p = new HashMap<>();
        p.put(ReplicaConfig.NAME, "r1");
        p.put(ReplicaConfig.HOSTNAME, "db.example");
        p.put(ReplicaConfig.USER, "u");
        p.put(ReplicaConfig.PASSWORD, "s3cret");
        p.put(ReplicaConfig.DBNAME, "shop");
        p.put(ReplicaConfig.TABLES, "public.a");
        p.put(ReplicaConfig.SLOT_NAME, "r1_slot");
        return p;
    }

    @Test
    void theReplicasOwnConnectionsUseTheTlsFilesGivenToDebezium() {
        Map<String, Object> p = config();
        p.put(ReplicaConfig.SSL_MODE, "verify-full");
        p.put(ReplicaConfig.DEBEZIUM_PREFIX + "database.sslrootcert", "certs/ca.pem");
        p.put(ReplicaConfig.DEBEZIUM_PREFIX + "database.sslcert", "certs/client.pem");
        p.put(ReplicaConfig.DEBEZIUM_PREFIX + "database.sslkey", "certs/client.pk8");
        Properties props = new PgConnector(new ReplicaConfig(p)).properties("checks");
        assertThat(props.getProperty("sslmode")).isEqualTo("verify-full");
        assertThat(props.getProperty("sslrootcert")).isEqualTo("certs/ca.pem");
        assertThat(props.getProperty("sslcert")).isEqualTo("certs/client.pem");
        assertThat(props.getProperty("sslkey")).isEqualTo("certs/client.pk8");
        assertThat(props.getProperty("sslpassword")).isNull();
    }

    @Test
    void withoutTlsFilesOnlyTheModeIsSet() {
        Properties props = new PgConnector(new ReplicaConfig(config())).properties("checks");
        assertThat(props.stringPropertyNames()).doesNotContain("sslrootcert", "sslcert", "sslkey", "sslpassword");
        assertThat(props.getProperty("password")).isEqualTo("s3cret");
    }
}
