package io.asofconnect.tablejoin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.asofconnect.common.lookup.RowKey;
import io.asofconnect.common.lookup.SourcePosition;
import io.asofconnect.common.lookup.Version;
import io.asofconnect.store.MapDbVersionStore;
import io.asofconnect.store.StoreOptions;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The changelog against retention: what a view started after a prune reads, and a view that fell behind it. */
class ViewChangelogTest {
    private static final Schema POST = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA)
            .field("author_id", Schema.INT64_SCHEMA).build();
    private static final Schema FOLLOW = SchemaBuilder.struct().field("follower_id", Schema.INT64_SCHEMA)
            .field("followee_id", Schema.INT64_SCHEMA).build();

    @TempDir
    Path dir;

    private static ViewDefinition view() {
        return new ViewDefinition(new ViewSide("public.posts", "posts", List.of("author_id"), List.of(), false),
                new ViewSide("public.follows", "follows", List.of("followee_id"), List.of(), false), JoinType.INNER,
                List.of(new OutputColumn(false, "follower_id", "follower_id"), new OutputColumn(true, "id", "post_id")),
                List.of("follower_id", "post_id"), Encoding.UPSERT);
    }

    private MapDbVersionStore open() {
        ViewDefinition v = view();
        return MapDbVersionStore.open(dir.resolve("store.mapdb"), StoreOptions.defaults()
                .withIndexes(List.of(v.left().index(), v.right().index()))
                .withFeedTables(Set.of("public.posts", "public.follows")));
    }

    private static ViewChangelog changelog(MapDbVersionStore store) {
        ViewDefinition v = view();
        return new ViewChangelog(v, store, new DeltaJoin(v, store, new ViewRows(v, "v")),
                new ChangelogEncoder(Encoding.UPSERT, "__op", "v"), "v", null);
    }

    private static void post(MapDbVersionStore s, long id, long author, long at, long lsn) {
        s.put("public.posts", RowKey.of(id), new Version(at, new SourcePosition(lsn, 0), new Struct(POST).put("id", id).put("author_id", author)));
    }

    private static void follow(MapDbVersionStore s, long follower, long followee, long at, long lsn) {
        s.put("public.follows", RowKey.of(follower, followee),
                new Version(at, new SourcePosition(lsn, 0), new Struct(FOLLOW).put("follower_id", follower).put("followee_id", followee)));
    }

    private static Set<List<Object>> keys(List<ViewChangelog.Entry> entries) {
        Set<List<Object>> rows = new HashSet<>();
        for (ViewChangelog.Entry e : entries) {
            List<Object> key = List.of(e.record().key().get("follower_id"), e.record().key().get("post_id"));
            if (e.record().value() == null) {
                rows.remove(key);
            } else {
                rows.add(key);
            }
        }
        return rows;
    }

    /** Rows whose last change is older than the horizon keep that version, and a new view must meet them. */
    @Test
    void aViewStartedAfterAPruneHasEveryRowThatStillExists() {
        try (MapDbVersionStore s = open()) {
            post(s, 1, 7, 100, 1);
            follow(s, 50, 7, 110, 2);
            post(s, 2, 7, 120, 3);
            post(s, 2, 8, 130, 4); // post 2 moves away: its version at 120 is pruned below
            follow(s, 51, 7, 300, 5);
            s.commit();
            assertThat(s.prune(200)).isEqualTo(1);
            s.commit();
            assertThat(keys(changelog(s).next(Long.MAX_VALUE, 100)))
                    .containsExactlyInAnyOrder(List.of(50L, 1L), List.of(51L, 1L));
        }
    }

    @Test
    void aViewThatFellBehindAPruneFailsNamingTheFix() {
        try (MapDbVersionStore s = open()) {
            post(s, 1, 7, 100, 1);
            follow(s, 50, 7, 110, 2);
            follow(s, 51, 7, 120, 3);
            s.commit();
            ViewChangelog c = changelog(s);
            assertThat(c.next(115, 100)).hasSize(1);
            follow(s, 51, 8, 130, 4);
            s.commit();
            s.prune(125);
            s.commit();
            assertThatThrownBy(() -> c.next(Long.MAX_VALUE, 100)).isInstanceOf(ConnectException.class)
                    .hasMessageContaining("lost history").hasMessageContaining("replica.history.retention.ms");
        }
    }

    /** After a restart, a left row without a match takes its right columns' types from a row the replica retains. */
    @Test
    void aLeftViewResumedBeforeAnyRightChangeStillWritesRowsWithoutAMatch() {
        Schema author = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("name", Schema.STRING_SCHEMA).build();
        ViewDefinition v = new ViewDefinition(new ViewSide("public.posts", "posts", List.of("author_id"), List.of(), false),
                new ViewSide("public.authors", "authors", List.of("id"), List.of(), false), JoinType.LEFT,
                List.of(new OutputColumn(true, "id", "post_id"), new OutputColumn(false, "name", "author_name")),
                List.of("post_id"), Encoding.UPSERT);
        try (MapDbVersionStore s = MapDbVersionStore.open(dir.resolve("left.mapdb"), StoreOptions.defaults()
                .withIndexes(List.of(v.left().index(), v.right().index()))
                .withFeedTables(Set.of("public.posts", "public.authors")))) {
            s.put("public.authors", RowKey.of(7L), new Version(100, new SourcePosition(1, 0), new Struct(author).put("id", 7L).put("name", "a")));
            post(s, 1, 9, 110, 2); // no author 9: the first task knows the authors' schema from author 7's change
            post(s, 2, 9, 120, 3);
            s.commit();
            ViewChangelog first = new ViewChangelog(v, s, new DeltaJoin(v, s, new ViewRows(v, "v")),
                    new ChangelogEncoder(Encoding.UPSERT, "__op", "v"), "v", null);
            List<ViewChangelog.Entry> before = first.next(115, 100);
            assertThat(before).hasSize(1);
            ViewChangelog resumed = new ViewChangelog(v, s, new DeltaJoin(v, s, new ViewRows(v, "v")),
                    new ChangelogEncoder(Encoding.UPSERT, "__op", "v"), "v", before.get(0).offset());
            List<ViewChangelog.Entry> after = resumed.next(Long.MAX_VALUE, 100);
            assertThat(after).hasSize(1);
            Struct row = after.get(0).record().value();
            assertThat(row.get("post_id")).isEqualTo(2L);
            assertThat(row.get("author_name")).isNull();
            assertThat(row.schema().field("author_name").schema().type()).isEqualTo(Schema.Type.STRING);
        }
    }
}
