package io.asofconnect.replica.config;

import io.asofconnect.common.lookup.IndexDeclaration;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ReplicaConfigTest {

    private static Map<String, Object> full() {
        Map<String, Object> p = new HashMap<>();
        p.put(ReplicaConfig.NAME, "r1");
        p.put(ReplicaConfig.HOSTNAME, "db.example");
        p.put(ReplicaConfig.USER, "u");
        p.put(ReplicaConfig.PASSWORD, "s3cret");
        p.put(ReplicaConfig.DBNAME, "shop");
        p.put(ReplicaConfig.TABLES, "public.a, public.b");
        p.put(ReplicaConfig.SLOT_NAME, "r1_slot");
        return p;
    }

    @Test
    void parsesDefaultsAndDerivedValues() {
        ReplicaConfig c = new ReplicaConfig(full());
        assertThat(c.port()).isEqualTo(5432);
        assertThat(c.tables()).containsExactly("public.a", "public.b");
        assertThat(c.publicationName()).isEqualTo("r1_slot_pub");
        assertThat(c.validFrom()).isEqualTo(ReplicaConfig.ValidFrom.COMMIT_TIME);
        assertThat(c.snapshotValidFrom()).isEqualTo(ReplicaConfig.SnapshotValidFrom.BEGINNING_OF_TIME);
        assertThat(c.onGap()).isEqualTo(ReplicaConfig.OnGap.FAIL);
        assertThat(c.historyRetentionMs()).isEqualTo(7L * 24 * 3600 * 1000);
        assertThat(c.directory()).isEqualTo(Path.of(System.getProperty("user.dir"), "asof-replica").toAbsolutePath());
        assertThat(c.storeFile().getFileName().toString()).isEqualTo("r1.mapdb");
        assertThat(c.isDefinition()).isTrue();
        c.requireDefinition();
    }

    @Test
    void enumsAreCaseInsensitiveAndTheirErrorsListTheValues() {
        Map<String, Object> p = full();
        p.put(ReplicaConfig.ON_GAP, "rebuild");
        assertThat(new ReplicaConfig(p).onGap()).isEqualTo(ReplicaConfig.OnGap.REBUILD);
        p.put(ReplicaConfig.ON_GAP, "sometimes");
        assertThatThrownBy(() -> new ReplicaConfig(p)).isInstanceOf(ConfigException.class)
                .hasMessageContaining(ReplicaConfig.ON_GAP).hasMessageContaining("FAIL, REBUILD");
        assertThat(ReplicaConfig.CONFIG_DEF.configKeys().get(ReplicaConfig.VALID_FROM).validator.toString()).isEqualTo("COMMIT_TIME, COLUMN");
    }

    @Test
    void columnValidFromNeedsTheColumn() {
        Map<String, Object> p = full();
        p.put(ReplicaConfig.VALID_FROM, "COLUMN");
        assertThatThrownBy(() -> new ReplicaConfig(p)).isInstanceOf(ConfigException.class).hasMessageContaining(ReplicaConfig.VALID_FROM_COLUMN);
    }

    @Test
    void debeziumPassThroughIsStrippedAndReservedKeysAreRejected() {
        Map<String, Object> p = full();
        p.put("replica.debezium.snapshot.fetch.size", "5000");
        assertThat(new ReplicaConfig(p).debeziumOverrides()).containsEntry("snapshot.fetch.size", "5000");
        for (String reserved : List.of("slot.name", "connector.class", "offset.storage.file.filename", "table.include.list", "plugin.name")) {
            Map<String, Object> bad = full();
            bad.put("replica.debezium." + reserved, "x");
            assertThatThrownBy(() -> new ReplicaConfig(bad)).as(reserved).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("replica.debezium." + reserved).hasMessageContaining("sets the Debezium option");
        }
    }

    @Test
    void snapshotModeCannotBeOverriddenBecauseASecondSnapshotWouldRewriteAnswersBehindTheWatermark() {
        for (String mode : List.of("always", "when_needed", "initial", "no_data")) {
            Map<String, Object> bad = full();
            bad.put("replica.debezium.snapshot.mode", mode);
            assertThatThrownBy(() -> new ReplicaConfig(bad)).as(mode).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("replica.debezium.snapshot.mode").hasMessageContaining("snapshot.mode=initial")
                    .hasMessageContaining("watermark");
        }
        assertThat(ReplicaConfig.RESERVED_DEBEZIUM_KEYS).contains("snapshot.mode");
        assertThat(io.asofconnect.replica.capture.EngineProperties.of(new ReplicaConfig(full()), "test.OffsetStore").getProperty("snapshot.mode"))
                .isEqualTo("initial");
    }

    @Test
    void tablesAndKeyColumnsAreValidated() {
        Map<String, Object> p = full();
        p.put(ReplicaConfig.TABLES, "customers");
        assertThatThrownBy(() -> new ReplicaConfig(p)).isInstanceOf(ConfigException.class).hasMessageContaining("schema.table");
        Map<String, Object> k = full();
        k.put(ReplicaConfig.KEY_COLUMNS, "public.a:x,y;public.b:z");
        assertThat(new ReplicaConfig(k).keyColumns()).containsEntry("public.a", List.of("x", "y")).containsEntry("public.b", List.of("z"));
        k.put(ReplicaConfig.KEY_COLUMNS, "public.a");
        assertThatThrownBy(() -> new ReplicaConfig(k)).isInstanceOf(ConfigException.class).hasMessageContaining(ReplicaConfig.KEY_COLUMNS);
        k.put(ReplicaConfig.KEY_COLUMNS, "public.zzz:x");
        assertThatThrownBy(() -> new ReplicaConfig(k)).isInstanceOf(ConfigException.class).hasMessageContaining("not in " + ReplicaConfig.TABLES);
    }

    @Test
    void nameAloneIsNotADefinitionAndAnIncompleteDefinitionSaysWhatIsMissing() {
        ReplicaConfig byName = new ReplicaConfig(Map.of(ReplicaConfig.NAME, "r1"));
        assertThat(byName.isDefinition()).isFalse();
        Map<String, Object> p = full();
        p.remove(ReplicaConfig.SLOT_NAME);
        ReplicaConfig c = new ReplicaConfig(p);
        assertThatThrownBy(c::requireDefinition).isInstanceOf(ConfigException.class).hasMessageContaining(ReplicaConfig.SLOT_NAME);
    }

    @Test
    void passwordStaysOutOfToStringAndDifferingKeysNameOnlyKeys() {
        ReplicaConfig a = new ReplicaConfig(full());
        Map<String, Object> p = full();
        p.put(ReplicaConfig.PASSWORD, "other");
        p.put(ReplicaConfig.PORT, "5433");
        ReplicaConfig b = new ReplicaConfig(p);
        assertThat(a.toString()).doesNotContain("s3cret");
        assertThat(a.differingKeys(b)).containsExactly(ReplicaConfig.PASSWORD, ReplicaConfig.PORT);
        Map<String, Object> same = full();
        same.put(ReplicaConfig.PORT, 5432);
        assertThat(a.differingKeys(new ReplicaConfig(same))).isEmpty();
    }

    /** Config is the user interface: every key typed, defaulted (but the name), validated, ranked and documented. */
    @Test
    void everyKeyHasTypeDefaultValidatorImportanceAndAnActionableDoc() {
        for (ConfigDef.ConfigKey k : ReplicaConfig.CONFIG_DEF.configKeys().values()) {
            assertThat(k.type).as(k.name).isNotNull();
            assertThat(k.importance).as(k.name).isNotNull();
            assertThat(k.hasDefault()).as("%s has a default (only %s is required)", k.name, ReplicaConfig.NAME)
                    .isEqualTo(!k.name.equals(ReplicaConfig.NAME));
            if (k.type != ConfigDef.Type.BOOLEAN && k.type != ConfigDef.Type.PASSWORD) {
                assertThat(k.validator).as("%s has a validator", k.name).isNotNull();
                assertThat(k.validator.toString()).as("%s's validator describes itself", k.name).isNotBlank();
            }
            assertThat(k.documentation).as(k.name).hasSizeGreaterThan(40);
        }
    }

    @Test
    void blankStringsAndBadColumnNamesAreRejectedButUnsetOptionalKeysAreFine() {
        for (String key : List.of(ReplicaConfig.HOSTNAME, ReplicaConfig.USER, ReplicaConfig.DBNAME, ReplicaConfig.PATH,
                ReplicaConfig.VALID_FROM_COLUMN)) {
            Map<String, Object> p = full();
            p.put(key, "  ");
            assertThatThrownBy(() -> new ReplicaConfig(p)).as(key).isInstanceOf(ConfigException.class).hasMessageContaining(key);
        }
        for (String bad : List.of("1col", "eff from", "\"eff\"", "a.b")) {
            Map<String, Object> p = full();
            p.put(ReplicaConfig.VALID_FROM_COLUMN, bad);
            assertThatThrownBy(() -> new ReplicaConfig(p)).as(bad).isInstanceOf(ConfigException.class)
                    .hasMessageContaining(ReplicaConfig.VALID_FROM_COLUMN);
        }
        Map<String, Object> ok = full();
        ok.put(ReplicaConfig.VALID_FROM_COLUMN, "EffectiveFrom_1");
        assertThat(new ReplicaConfig(ok).validFromColumn()).isEqualTo("EffectiveFrom_1");
        assertThat(new ReplicaConfig(Map.of(ReplicaConfig.NAME, "r1")).hostname()).isNull();
    }

    @Test
    void addToEmbedsEveryKeyWithDocs() {
        ConfigDef def = ReplicaConfig.addTo(new ConfigDef().define("other", ConfigDef.Type.STRING, "x", ConfigDef.Importance.LOW, "doc"));
        assertThat(def.names()).containsAll(ReplicaConfig.CONFIG_DEF.names()).contains("other");
        for (ConfigDef.ConfigKey k : ReplicaConfig.CONFIG_DEF.configKeys().values()) {
            assertThat(k.name).startsWith(ReplicaConfig.PREFIX);
            assertThat(k.documentation).as(k.name).isNotBlank();
        }
        assertThat(ReplicaConfig.CONFIG_DEF.configKeys().get(ReplicaConfig.PASSWORD).type).isEqualTo(ConfigDef.Type.PASSWORD);
    }

    @Test
    void hostIsADnsNameOrAnIpAddressAndNothingThatCouldCarryDriverProperties() {
        for (String good : List.of("db.example", "localhost", "db-1.internal.", "my_db", "10.0.0.1", "[::1]", "[2001:db8::1]",
                "[::ffff:10.0.0.1]")) {
            Map<String, Object> p = full();
            p.put(ReplicaConfig.HOSTNAME, good);
            assertThat(new ReplicaConfig(p).hostname()).as(good).isEqualTo(good);
        }
        for (String bad : List.of("h/db?socketFactory=org.example.Evil&x=", "h?loggerFile=/tmp/x", "h:5432", "user@h", "a b",
                "::1", "[::1", "[::g]", "999.1.1.1", "1.2.3", "-bad", "bad-", "a..b", "h#x", "x".repeat(64) + ".example", "  ")) {
            Map<String, Object> p = full();
            p.put(ReplicaConfig.HOSTNAME, bad);
            assertThatThrownBy(() -> new ReplicaConfig(p)).as(bad).isInstanceOf(ConfigException.class)
                    .hasMessageContaining(ReplicaConfig.HOSTNAME).hasMessageContaining("DNS name");
        }
    }

    @Test
    void theUrlCarriesOnlyHostPortAndTheEncodedDatabase() {
        for (String dbname : List.of("shop", "my shop", "shop;x=1", "sh\u00f6p", "a=c")) {
            Map<String, Object> p = full();
            p.put(ReplicaConfig.DBNAME, dbname);
            p.put(ReplicaConfig.PORT, "6543");
            java.util.Properties parsed = org.postgresql.Driver.parseURL(new ReplicaConfig(p).jdbcUrl(), null);
            assertThat(parsed).as(dbname).isNotNull();
            assertThat(parsed.getProperty("PGDBNAME")).as(dbname).isEqualTo(dbname);
            assertThat(parsed.getProperty("PGHOST")).isEqualTo("db.example");
            assertThat(parsed.getProperty("PGPORT")).isEqualTo("6543");
            assertThat(parsed.stringPropertyNames()).as(dbname).containsOnly("PGDBNAME", "PGHOST", "PGPORT");
        }
        // Debezium builds its own URL from the name without encoding it: what would end the URL's path is refused.
        for (String bad : List.of("shop?socketFactory=org.example.Evil", "shop&x=1", "a/b", "a#b", "a%3Fb", "a\\b", "a\nb", "  ", "a+b")) {
            Map<String, Object> p = full();
            p.put(ReplicaConfig.DBNAME, bad);
            assertThatThrownBy(() -> new ReplicaConfig(p)).as(bad).isInstanceOf(ConfigException.class)
                    .hasMessageContaining(ReplicaConfig.DBNAME);
        }
    }

    @Test
    void driverPropertiesThatLoadClassesOrWriteFilesAreRefusedInEveryPassThroughForm() {
        for (String property : List.of("socketFactory", "socketFactoryArg", "sslfactory", "sslfactoryarg", "sslhostnameverifier",
                "sslpasswordcallback", "authenticationPluginClassName", "loggerFile", "loggerLevel", "xmlFactoryFactory")) {
            for (String form : List.of("database.", "driver.", "", "DATABASE.")) {
                String key = ReplicaConfig.DEBEZIUM_PREFIX + form + property;
                Map<String, Object> bad = full();
                bad.put(key, "org.example.Evil");
                assertThatThrownBy(() -> new ReplicaConfig(bad)).as(key).isInstanceOf(ConfigException.class)
                        .hasMessageContaining(key).hasMessageContaining("loads a class or writes a file")
                        .hasMessageNotContaining("org.example.Evil");
            }
        }
        assertThat(io.asofconnect.common.jdbc.JdbcDriverProperties.FORBIDDEN).hasSize(10);
        Map<String, Object> ok = full();
        ok.put(ReplicaConfig.DEBEZIUM_PREFIX + "database.sslrootcert", "/etc/ssl/ca.pem");
        ok.put(ReplicaConfig.DEBEZIUM_PREFIX + "driver.tcpKeepAlive", "true");
        assertThat(new ReplicaConfig(ok).debeziumOverrides()).containsEntry("database.sslrootcert", "/etc/ssl/ca.pem")
                .containsEntry("driver.tcpKeepAlive", "true");
    }

    @Test
    void sslModeDefaultsToDebeziumsPreferIsValidatedAndReachesEveryConnection() {
        assertThat(new ReplicaConfig(full()).sslMode()).isEqualTo("prefer").isEqualTo(ReplicaConfig.DEFAULT_SSL_MODE);
        Map<String, Object> p = full();
        p.put(ReplicaConfig.SSL_MODE, "VERIFY-FULL");
        ReplicaConfig c = new ReplicaConfig(p);
        assertThat(c.sslMode()).isEqualTo("verify-full");
        assertThat(io.asofconnect.replica.capture.EngineProperties.of(c, "test.OffsetStore").getProperty("database.sslmode")).isEqualTo("verify-full");
        p.put(ReplicaConfig.SSL_MODE, "sometimes");
        assertThatThrownBy(() -> new ReplicaConfig(p)).isInstanceOf(ConfigException.class).hasMessageContaining(ReplicaConfig.SSL_MODE)
                .hasMessageContaining("verify-full");
        for (String passThrough : List.of("database.sslmode", "driver.sslmode")) {
            Map<String, Object> bad = full();
            bad.put(ReplicaConfig.DEBEZIUM_PREFIX + passThrough, "disable");
            assertThatThrownBy(() -> new ReplicaConfig(bad)).as(passThrough).isInstanceOf(ConfigException.class)
                    .hasMessageContaining(ReplicaConfig.DEBEZIUM_PREFIX + passThrough).hasMessageContaining(ReplicaConfig.SSL_MODE);
        }
    }

    @Test
    void indexesAndFeedTablesAreEmptyByDefault() {
        ReplicaConfig c = new ReplicaConfig(full());
        assertThat(c.indexes()).isEmpty();
        assertThat(c.feedTables()).isEmpty();
    }

    @Test
    void indexesKeepTheirColumnsThoughTheListSplitsAtEveryComma() {
        Map<String, Object> p = full();
        p.put(ReplicaConfig.INDEXES, "public.a(author_id), public.b(follower_id, followee_id),public.a(author_id)");
        p.put(ReplicaConfig.FEED_TABLES, "public.a,public.b");
        ReplicaConfig c = new ReplicaConfig(p);
        assertThat(c.indexes()).containsExactly(IndexDeclaration.parse("public.a(author_id)"),
                IndexDeclaration.parse("public.b(follower_id,followee_id)"));
        assertThat(c.feedTables()).containsExactlyInAnyOrder("public.a", "public.b");
        // Given as a list, as a connector building the props from its view would.
        p.put(ReplicaConfig.INDEXES, List.of("public.b(follower_id,followee_id)"));
        assertThat(new ReplicaConfig(p).indexes()).containsExactly(IndexDeclaration.parse("public.b(follower_id,followee_id)"));
    }

    @Test
    void badIndexesSayWhatIsWrongAndTheFormToWrite() {
        for (String bad : List.of("public.a", "public.a(", "public.a()", "public.a(x,)", "a(x)", "public.a((x))", "public.a(x),,public.b(y)")) {
            Map<String, Object> p = full();
            p.put(ReplicaConfig.INDEXES, bad);
            assertThatThrownBy(() -> new ReplicaConfig(p)).as(bad).isInstanceOf(ConfigException.class)
                    .hasMessageContaining(ReplicaConfig.INDEXES).hasMessageContaining("schema.table(");
        }
        Map<String, Object> p = full();
        p.put(ReplicaConfig.INDEXES, "public.c(x)");
        assertThatThrownBy(() -> new ReplicaConfig(p)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("public.c(x)").hasMessageContaining("not in " + ReplicaConfig.TABLES);
        assertThat(ReplicaConfig.CONFIG_DEF.configKeys().get(ReplicaConfig.INDEXES).validator.toString())
                .startsWith("schema.table(column[,column...])");
    }

    @Test
    void feedTablesMustBeCapturedTables() {
        Map<String, Object> p = full();
        p.put(ReplicaConfig.FEED_TABLES, "public.a,public.c");
        assertThatThrownBy(() -> new ReplicaConfig(p)).isInstanceOf(ConfigException.class)
                .hasMessageContaining(ReplicaConfig.FEED_TABLES).hasMessageContaining("public.c").hasMessageContaining(ReplicaConfig.TABLES);
        p.put(ReplicaConfig.FEED_TABLES, "posts");
        assertThatThrownBy(() -> new ReplicaConfig(p)).isInstanceOf(ConfigException.class).hasMessageContaining("schema.table");
    }

    @Test
    void indexesAndFeedTablesAreComparedParsedAndWhatASharingUserNeedsIsChecked() {
        Map<String, Object> a = full();
        a.put(ReplicaConfig.INDEXES, "public.a(x,y)");
        Map<String, Object> b = full();
        b.put(ReplicaConfig.INDEXES, List.of("public.a(x, y)"));
        assertThat(new ReplicaConfig(a).differingKeys(new ReplicaConfig(b))).isEmpty();
        assertThat(new ReplicaConfig(a).differingKeys(new ReplicaConfig(full()))).containsExactly(ReplicaConfig.INDEXES);
        b.put(ReplicaConfig.FEED_TABLES, "public.a");
        assertThat(new ReplicaConfig(a).differingKeys(new ReplicaConfig(b))).containsExactly(ReplicaConfig.FEED_TABLES);

        // A user naming the replica and what it needs does not define it; it needs what the running one keeps.
        Map<String, Object> user = new HashMap<>();
        user.put(ReplicaConfig.NAME, "r1");
        user.put(ReplicaConfig.INDEXES, "public.a(x,y)");
        user.put(ReplicaConfig.FEED_TABLES, "public.a");
        ReplicaConfig needs = new ReplicaConfig(user);
        assertThat(needs.isDefinition()).isFalse();
        assertThat(needs.missingFrom(new ReplicaConfig(b))).isEmpty();
        assertThat(needs.missingFrom(new ReplicaConfig(full()))).containsExactly(
                "the index public.a(x,y) (" + ReplicaConfig.INDEXES + ")", "the feed of table public.a (" + ReplicaConfig.FEED_TABLES + ")");
    }
}
