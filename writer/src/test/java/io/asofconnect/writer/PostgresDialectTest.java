package io.asofconnect.writer;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PostgresDialectTest {
    @Test
    void identifiersAreQuotedWhole() {
        assertThat(PostgresDialect.quote("a\"b; DROP TABLE x; --")).isEqualTo("\"a\"\"b; DROP TABLE x; --\"");
        assertThatThrownBy(() -> PostgresDialect.quote("é".repeat(32))).hasMessageContaining("63 bytes");
        assertThatThrownBy(() -> PostgresDialect.quote("a\0b")).hasMessageContaining("NUL");
        PostgresDialect d = new PostgresDialect("s");
        RowChange.Shape upsert = new RowChange.Shape("t", RowChange.Op.UPSERT, List.of("id"), List.of("v"));
        assertThat(d.statement(upsert)).isEqualTo("INSERT INTO \"s\".\"t\" (\"id\", \"v\") VALUES (?, ?) ON CONFLICT (\"id\") DO UPDATE SET \"v\" = EXCLUDED.\"v\"");
        assertThat(d.statement(new RowChange.Shape("t", RowChange.Op.DELETE, List.of("a", "b"), List.of())))
                .isEqualTo("DELETE FROM \"s\".\"t\" WHERE \"a\" = ? AND \"b\" = ?");
    }
}
