package io.asofconnect.writer.config;

import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The validators of the writer's options on their own; the sink's config/validate tests cover them in place. */
class ValidatorsTest {
    private final JdbcUrlValidator url = new JdbcUrlValidator();

    @Test
    void weakSslModesAreDetected() {
        assertThat(JdbcUrlValidator.weakSslMode("jdbc:postgresql://db/app?sslmode=prefer")).contains("prefer");
        assertThat(JdbcUrlValidator.weakSslMode("jdbc:postgresql://db/app?sslmode=disable")).contains("disable");
        assertThat(JdbcUrlValidator.weakSslMode("jdbc:postgresql://db/app?sslmode=verify-full")).isEmpty();
        assertThat(JdbcUrlValidator.weakSslMode("jdbc:postgresql://db/app?ssl=true")).as("ssl=true means verify-full").isEmpty();
        assertThat(JdbcUrlValidator.weakSslMode("jdbc:postgresql://db/app")).as("the driver's default").contains("prefer");
    }

    @ParameterizedTest
    @ValueSource(strings = {"socketFactory", "sslfactory", "SSLFactory", "authenticationPluginClassName", "loggerFile", "socket%46actory"})
    void urlsWithClassLoadingOrFileWritingPropertiesAreRejectedWithoutEchoingTheUrl(String property) {
        assertThatThrownBy(() -> url.ensureValid(WriterOptions.CONNECTION_URL, "jdbc:postgresql://db/app?" + property + "=evil.Clazz-marker"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("loads classes or writes files")
                .hasMessageNotContaining("evil.Clazz-marker");
    }

    @Test
    void aPasswordInTheUrlPointsToThePasswordOption() {
        assertThatThrownBy(() -> url.ensureValid(WriterOptions.CONNECTION_URL, "jdbc:postgresql://db/app?password=hunter2-marker"))
                .hasMessageContaining(WriterOptions.CONNECTION_PASSWORD)
                .hasMessageNotContaining("hunter2-marker");
    }

    @Test
    void onlyPostgresUrlsAreAccepted() {
        assertThatThrownBy(() -> url.ensureValid(WriterOptions.CONNECTION_URL, "jdbc:mysql://db/app")).hasMessageContaining("jdbc:postgresql:");
        assertThatThrownBy(() -> url.ensureValid(WriterOptions.CONNECTION_URL, " ")).hasMessageContaining("is required");
        assertThatCode(() -> url.ensureValid(WriterOptions.CONNECTION_URL, " jdbc:postgresql://db/app?sslmode=verify-full ")).doesNotThrowAnyException();
    }

    @Test
    void identifiersAreCheckedForLengthAndNul() {
        IdentifierValidator id = new IdentifierValidator();
        assertThatCode(() -> id.ensureValid("t", "odd; \"name\"")).doesNotThrowAnyException();
        assertThatThrownBy(() -> id.ensureValid("t", "x".repeat(64))).hasMessageContaining("63 bytes");
        assertThatThrownBy(() -> id.ensureValid("t", null)).hasMessageContaining("t is required");
    }

    @Test
    void identifierListsAreDistinctAndWithoutEmptyEntries() {
        IdentifierListValidator ids = new IdentifierListValidator();
        assertThatCode(() -> ids.ensureValid("k", List.of("a", " b "))).doesNotThrowAnyException();
        assertThatThrownBy(() -> ids.ensureValid("k", List.of("id", "id "))).hasMessageContaining("id is listed twice");
        assertThatThrownBy(() -> ids.ensureValid("k", List.of("a", "", "b"))).hasMessageContaining("entry 2 is empty");
        assertThatThrownBy(() -> ids.ensureValid("k", List.of("a", "x".repeat(64)))).hasMessageContaining("entry 2 is 64 bytes");
    }
}
