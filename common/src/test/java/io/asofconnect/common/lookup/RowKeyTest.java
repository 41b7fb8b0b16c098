package io.asofconnect.common.lookup;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** A key's encoding: the integral fast path against the text of {@link Long#toString}, and the hash and equality the store relies on. */
class RowKeyTest {

    @Test
    void anIntegralKeyIsTheKeyOfItsDecimalText() {
        SplittableRandom rnd = new SplittableRandom(7);
        long[] edges = {0, 1, -1, 9, 10, -10, 99, 100, Long.MAX_VALUE, Long.MIN_VALUE, Integer.MAX_VALUE, Integer.MIN_VALUE};
        for (int i = 0; i < 10_000 + edges.length; i++) {
            long v = i < edges.length ? edges[i] : rnd.nextLong() >> rnd.nextInt(64);
            RowKey fast = RowKey.of(v);
            RowKey text = RowKey.of(List.of(Long.toString(v)));
            assertThat(fast).as("%s", v).isEqualTo(text);
            assertThat(fast.encoded()).isEqualTo(text.encoded());
            assertThat(fast.components()).containsExactly(Long.toString(v));
            assertThat(fast.hashCode()).isEqualTo(text.hashCode());
        }
        assertThat(RowKey.of(42)).isEqualTo(RowKey.of(42L)).isEqualTo(RowKey.of((short) 42)).isEqualTo(RowKey.of("42"));
    }

    @Test
    void theHashAndEqualityAreThoseOfTheEncoding() {
        RowKey k = RowKey.of("a", 7L, true);
        byte[] e = k.encoded();
        byte[] padded = new byte[e.length + 6];
        System.arraycopy(e, 0, padded, 3, e.length);
        assertThat(k.encodedEquals(padded, 3, 3 + e.length)).isTrue();
        assertThat(k.encodedEquals(padded, 2, 2 + e.length)).isFalse();
        assertThat(k.encodedHash()).isEqualTo(RowKey.hashOfEncoded(padded, 3, 3 + e.length));
        assertThat(k.encodedLength()).isEqualTo(e.length);
        assertThat(RowKey.decode(e)).isEqualTo(k);
        assertThat(k.components()).containsExactly("a", "7", "true");
        assertThat(RowKey.of("a", 7L)).isNotEqualTo(k);
        assertThat(RowKey.of("ab")).isNotEqualTo(RowKey.of("a", "b"));
    }
}
