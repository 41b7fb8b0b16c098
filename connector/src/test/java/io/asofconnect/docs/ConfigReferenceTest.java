package io.asofconnect.docs;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

class ConfigReferenceTest {
    private static final Path REFERENCE = Path.of("..", "docs", "configuration.md");

    @Test
    void documentedOptionsMatchTheConfigDefs() throws IOException {
        String generated = ConfigReference.render();
        if (Boolean.getBoolean("asof.docs.write")) {
            Files.writeString(REFERENCE, generated, StandardCharsets.UTF_8);
        }
        assertThat(Files.exists(REFERENCE))
                .as("docs/configuration.md is missing; regenerate it with -Dasof.docs.write=true (see its header)")
                .isTrue();
        assertThat(Files.readString(REFERENCE, StandardCharsets.UTF_8))
                .as("docs/configuration.md differs from the ConfigDefs; regenerate it with -Dasof.docs.write=true (see its header)")
                .isEqualTo(generated);
    }
}
