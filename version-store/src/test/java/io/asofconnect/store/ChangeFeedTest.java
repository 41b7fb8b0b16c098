package io.asofconnect.store;

import io.asofconnect.common.lookup.Change;
import io.asofconnect.common.lookup.IndexDeclaration;
import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.common.lookup.VersionId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static io.asofconnect.store.ChangeFeedPropertyTest.FOLLOWS;
import static io.asofconnect.store.ChangeFeedPropertyTest.POSTS;
import static io.asofconnect.store.ChangeFeedPropertyTest.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ChangeFeedTest {
    @TempDir
    Path dir;

    private MapDbVersionStore open(StoreOptions options) {
        return MapDbVersionStore.open(dir.resolve("s.db"), options);
    }

    private static StoreOptions declared() {
        return StoreOptions.defaults().withIndexes(ChangeFeedPropertyTest.INDEXES).withFeedTables(ChangeFeedPropertyTest.FEED_TABLES);
    }

    private static Version v(long validFrom, long lsn, long id, int grp) {
        return new Version(validFrom, new SourcePosition(lsn, 0), row(id, grp));
    }

    @Test
    void aStoreWithoutDeclarationsHasAnEmptyFeedAndNoIndex() {
        try (MapDbVersionStore s = open(StoreOptions.defaults())) {
            s.put(POSTS, RowKey.of(1), v(10, 1, 1, 0));
            s.commit();
            assertThat(s.changesAfter(Change.START, Long.MAX_VALUE, 10)).isEmpty();
            assertThatThrownBy(() -> s.indexed(POSTS, List.of("grp"), RowKey.of(0L), null, 10))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no index on public.posts(grp)")
                    .hasMessageContaining("none");
            // before reads the rows, declared or not.
            assertThat(s.before(POSTS, RowKey.of(1), new Change(new VersionId(11, new SourcePosition(1, 0)), POSTS, RowKey.of(1))))
                    .contains(v(10, 1, 1, 0));
        }
    }

    @Test
    void snapshotRowsSharingAnIdAreOrderedByTableThenKeyAndBeforeUsesTheSameTieBreak() {
        VersionId snapshot = new VersionId(Version.BEGINNING_OF_TIME, new SourcePosition(5, 0));
        try (MapDbVersionStore s = open(declared())) {
            for (String table : List.of(POSTS, FOLLOWS)) {
                for (int k = 1; k <= 2; k++) {
                    s.put(table, RowKey.of(k), new Version(snapshot.validFrom(), snapshot.position(), row(k, k)));
                }
            }
            s.put("public.other", RowKey.of(1), new Version(snapshot.validFrom(), snapshot.position(), row(1, 1)));
            s.commit();
            List<Change> feed = s.changesAfter(Change.START, Long.MAX_VALUE, 100);
            assertThat(feed).containsExactly(
                    new Change(snapshot, FOLLOWS, RowKey.of(1)), new Change(snapshot, FOLLOWS, RowKey.of(2)),
                    new Change(snapshot, POSTS, RowKey.of(1)), new Change(snapshot, POSTS, RowKey.of(2)));
            // As of the third entry (posts 1), the follows rows are there and posts 2 is not yet.
            Change at = feed.get(2);
            assertThat(s.before(FOLLOWS, RowKey.of(2), at)).isPresent();
            assertThat(s.before(POSTS, RowKey.of(1), at)).as("the row the change names: its previous version").isEmpty();
            assertThat(s.before(POSTS, RowKey.of(2), at)).isEmpty();
            assertThat(s.before(POSTS, RowKey.of(2), feed.get(3))).isEmpty();
            assertThat(s.changesAfter(feed.get(1), Long.MAX_VALUE, 1)).containsExactly(feed.get(2));
        }
    }

    @Test
    void tombstonesAreInTheFeedAndReturnedByBeforeButIndexNothing() {
        try (MapDbVersionStore s = open(declared())) {
            s.put(POSTS, RowKey.of(1), v(10, 1, 1, 2));
            s.put(POSTS, RowKey.of(1), Version.tombstone(20, new SourcePosition(2, 0)));
            s.put(POSTS, RowKey.of(2), v(20, 2, 2, 2));
            s.commit();
            List<Change> feed = s.changesAfter(Change.START, Long.MAX_VALUE, 100);
            assertThat(feed).hasSize(3);
            assertThat(s.before(POSTS, RowKey.of(1), feed.get(2)).orElseThrow().isTombstone()).isTrue();
            // The tombstone's key still had grp 2 in a retained version: the index is a superset, checked by the reader.
            assertThat(s.indexed(POSTS, List.of("grp"), RowKey.of(2L), null, 10)).containsExactly(RowKey.of(1), RowKey.of(2));
            assertThat(s.indexed(POSTS, List.of("grp"), RowKey.of(2L), RowKey.of(1), 10)).containsExactly(RowKey.of(2));
            assertThat(s.indexed(POSTS, List.of("grp"), RowKey.of(1L), null, 10)).isEmpty();
            // int4 and int8 meet: the value is canonical.
            assertThat(s.indexed(POSTS, List.of("grp"), RowKey.of(2), null, 10)).hasSize(2);
        }
    }

    /**
     * A prune takes out of the feed exactly the versions it removes: a row's newest version before the horizon stays,
     * so a reader starting from the beginning still meets every row that exists; across a reopen too.
     */
    @Test
    void pruneKeepsTheFeedOfTheRetainedVersionsAcrossReopen() {
        try (MapDbVersionStore s = open(declared())) {
            s.put(POSTS, RowKey.of(1), v(10, 1, 1, 0));
            s.put(POSTS, RowKey.of(2), v(5, 2, 2, 3));
            s.put(POSTS, RowKey.of(2), v(12, 3, 2, 1));
            s.put(POSTS, RowKey.of(2), v(30, 4, 2, 2));
            s.commit();
            assertThat(s.prune(20)).isEqualTo(1);
            assertThat(s.changesAfter(Change.START, Long.MAX_VALUE, 10)).as("a prune shows at its commit").hasSize(4);
            s.commit();
            assertThat(s.changesAfter(Change.START, Long.MAX_VALUE, 10)).extracting(c -> c.id().validFrom())
                    .containsExactly(10L, 12L, 30L);
            // Versions kept as the newest before the horizon stay indexed; the removed one's value is gone.
            assertThat(s.indexed(POSTS, List.of("grp"), RowKey.of(0L), null, 10)).containsExactly(RowKey.of(1));
            assertThat(s.indexed(POSTS, List.of("grp"), RowKey.of(3L), null, 10)).isEmpty();
        }
        try (MapDbVersionStore s = open(declared())) {
            assertThat(s.changesAfter(Change.START, Long.MAX_VALUE, 10)).extracting(c -> c.id().validFrom())
                    .containsExactly(10L, 12L, 30L);
            assertThat(s.indexed(POSTS, List.of("grp"), RowKey.of(1L), null, 10)).containsExactly(RowKey.of(2));
        }
    }

    /**
     * A reader pages through the feed and probes the index while the writer commits, rolls back and prunes
     * (each prune rebuilds): every page is in order, nothing throws, and nothing uncommitted shows.
     */
    @Test
    void concurrentReadersSeeOrderedCommittedState() throws Exception {
        try (MapDbVersionStore s = open(declared())) {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread reader = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        Change after = Change.START;
                        while (true) {
                            List<Change> page = s.changesAfter(after, Long.MAX_VALUE, 50);
                            if (page.isEmpty()) {
                                break;
                            }
                            for (Change c : page) {
                                assertThat(c).isGreaterThan(after);
                                assertThat(c.key().components().get(0)).as("rolled back keys are negative").doesNotStartWith("-");
                                after = c;
                            }
                        }
                        List<RowKey> keys = s.indexed(POSTS, List.of("grp"), RowKey.of(1L), null, 1000);
                        assertThat(keys).isSorted();
                    }
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            reader.start();
            List<Long> pruned = new ArrayList<>();
            for (int i = 1; i <= 3000; i++) {
                s.put(POSTS, RowKey.of(i % 200), v(i, i, i % 200, i % 3));
                if (i % 7 == 0) {
                    s.put(POSTS, RowKey.of(-i), v(i, i + 100_000, -i, 1));
                    s.rollback();
                } else {
                    s.commit();
                }
                if (i % 500 == 0) {
                    pruned.add(s.prune(i - 400));
                    s.commit();
                }
            }
            stop.set(true);
            reader.join(30_000);
            assertThat(failure.get()).isNull();
            assertThat(pruned).anyMatch(n -> n > 0);
        }
    }

    @Test
    void optionsKeepTheirDeclarations() {
        StoreOptions o = StoreOptions.defaults().withIndexes(List.of(IndexDeclaration.parse("public.posts(author_id)")))
                .withFeedTables(Set.of(POSTS)).withVerification(StoreOptions.Verification.FULL).withOwner(() -> "x");
        assertThat(o.indexes()).containsExactly(IndexDeclaration.parse("public.posts(author_id)"));
        assertThat(o.feedTables()).containsExactly(POSTS);
        assertThat(StoreOptions.defaults().indexes()).isEmpty();
        assertThat(StoreOptions.defaults().feedTables()).isEmpty();
    }
}
