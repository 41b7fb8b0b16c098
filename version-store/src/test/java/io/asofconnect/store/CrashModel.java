package io.asofconnect.store;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.Version;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/** What a store holds after {@link StoreCrashWriter}'s transactions 1..n, and the check that it holds exactly that. */
final class CrashModel {
    private CrashModel() {
    }

    /** Asserts the store is exactly the committed prefix 1..n and returns n. */
    static long assertCommittedPrefix(VersionStore store) {
        long n = store.meta(StoreCrashWriter.SEQ).map(Long::parseLong).orElse(0L);
        assertThat(store.watermark()).isEqualTo(n == 0 ? Long.MIN_VALUE : n);
        if (n > 0) {
            assertThat(store.offsets()).containsEntry(StoreCrashWriter.OFFSET_KEY,
                    ByteBuffer.wrap(Long.toString(n).getBytes(StandardCharsets.UTF_8)));
        }
        List<List<Version>> expected = new ArrayList<>();
        for (int k = 0; k < StoreCrashWriter.KEYS; k++) {
            expected.add(new ArrayList<>());
        }
        for (long i = 1; i <= n; i++) {
            for (StoreCrashWriter.Change c : StoreCrashWriter.changes(i)) {
                expected.get(Integer.parseInt(c.key().components().get(0))).add(c.version());
            }
        }
        for (int k = 0; k < StoreCrashWriter.KEYS; k++) {
            RowKey key = RowKey.of(k);
            List<Version> versions = expected.get(k);
            assertThat(store.history(StoreCrashWriter.TABLE, key)).as("history of key %s after %s commits", k, n)
                    .containsExactlyElementsOf(versions);
            // As-of reads at a few instants, including between and past versions.
            for (long t : new long[]{0, n / 3, n / 2, n - 1, n, n + 1}) {
                Optional<Version> floor = versions.stream().filter(v -> v.validFrom() <= t).reduce((a, b) -> b);
                assertThat(store.floor(StoreCrashWriter.TABLE, key, t)).as("floor key %s t %s", k, t).isEqualTo(floor);
            }
        }
        for (int k = 0; k < StoreCrashWriter.BULK_KEYS; k++) {
            List<Version> bulk = new ArrayList<>();
            for (long i = StoreCrashWriter.BULK_EVERY; i <= n; i += StoreCrashWriter.BULK_EVERY) {
                bulk.add(StoreCrashWriter.bulkVersion(k, i));
            }
            List<Version> found = store.history(StoreCrashWriter.BULK_TABLE, RowKey.of(k));
            if (!found.equals(bulk)) {
                assertThat(found).as("bulk key %s after %s commits", k, n).containsExactlyElementsOf(bulk);
            }
        }
        // Nothing of a later transaction is present (the history check above covers the keys; this the key set).
        for (RowKey key : store.keys(StoreCrashWriter.TABLE)) {
            assertThat(Integer.parseInt(key.components().get(0))).isBetween(0, StoreCrashWriter.KEYS - 1);
        }
        return n;
    }
}
