package io.asofconnect.enrich;

import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.VersionId;
import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** The enrichment's version-id text is exactly {@link VersionId#toString()}'s, which {@code VersionId.parse} reads back. */
class VersionIdsTest {
    private static void same(long validFrom, long lsn, int ordinal) {
        SourcePosition p = new SourcePosition(lsn, ordinal);
        String text = VersionIds.format(validFrom, p);
        assertThat(text).isEqualTo(new VersionId(validFrom, p).toString());
        assertThat(VersionId.parse(text)).isEqualTo(new VersionId(validFrom, p));
    }

    @Test
    void edgesFormatAsTheIdsOwnForm() {
        long[] lsns = {0, 1, 0xF, 0x10, 0xFFFFFFFFL, 0x1_0000_0000L, 0x16_B374_D848L, 0xABCDEF01_23456789L, Long.MAX_VALUE, Long.MIN_VALUE, -1};
        long[] times = {0, 1, -1, 1_733_080_000_000L, Long.MAX_VALUE, Long.MIN_VALUE};
        int[] ordinals = {0, 1, 7, -3, Integer.MAX_VALUE, Integer.MIN_VALUE};
        for (long t : times) {
            for (long l : lsns) {
                for (int o : ordinals) {
                    assertThat(VersionIds.format(t, new SourcePosition(l, o))).isEqualTo(new VersionId(t, new SourcePosition(l, o)).toString());
                }
            }
        }
        same(1_733_080_000_000L, 0x16B3748L, 0);
        same(1_733_080_000_000L, 0x16_B374_D848L, 2);
    }

    @Test
    void randomIdsFormatAsTheIdsOwnForm() {
        SplittableRandom random = new SplittableRandom(7);
        for (int i = 0; i < 100_000; i++) {
            long lsn = random.nextLong() >>> random.nextInt(64);
            int ordinal = random.nextInt(4) == 0 ? random.nextInt() : 0;
            same(random.nextLong(), lsn & Long.MAX_VALUE, ordinal);
        }
    }
}
