package io.asofconnect.replica;

import org.apache.kafka.connect.errors.ConnectException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/** A server without logical decoding is refused at once, with the setting to change. */
class WalLevelCheckTest {
    private static SourceDb db;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDb() {
        db = SourceDb.start("replica");
        db.exec("CREATE TABLE public.t (id int PRIMARY KEY)");
    }

    @AfterAll
    static void stopDb() {
        if (db != null) {
            db.close();
        }
    }

    @Test
    void walLevelMustBeLogical() {
        Map<String, Object> p = db.props("wal", "wal_slot", dir, "public.t");
        assertTimeoutPreemptively(Duration.ofSeconds(20), () ->
                assertThatThrownBy(() -> ReplicaRegistry.acquire(p).close()).isInstanceOf(ConnectException.class)
                        .hasMessageContaining("wal_level=replica").hasMessageContaining("set wal_level=logical in postgresql.conf"));
    }
}
