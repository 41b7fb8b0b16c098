package io.asofconnect.replica;

import io.asofconnect.store.Quarantine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class QuarantineTest {
    @TempDir
    Path dir;

    @Test
    void rebuildsInTheSameMillisecondKeepEveryQuarantinedFile() throws Exception {
        Path store = dir.resolve("r.mapdb");
        Set<Path> aside = new HashSet<>();
        for (int i = 0; i < 20; i++) {
            Files.writeString(store, "store " + i);
            Files.writeString(dir.resolve("r.mapdb.wal.0"), "wal " + i);
            aside.add(Quarantine.moveAside(store));
        }
        assertThat(aside).hasSize(20);
        for (Path p : aside) {
            assertThat(Files.readString(p)).startsWith("store ");
            Path wal = p.resolveSibling(p.getFileName() + ".wal.0");
            assertThat(Files.readString(wal)).isEqualTo("wal " + Files.readString(p).substring("store ".length()));
        }
        assertThat(store).doesNotExist();
    }
}
