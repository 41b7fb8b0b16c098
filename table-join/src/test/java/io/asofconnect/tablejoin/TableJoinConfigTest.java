package io.asofconnect.tablejoin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

/** The view as the user writes it: parsed, and refused with the fix when it cannot work. */
class TableJoinConfigTest {

    static Map<String, String> timeline() {
        Map<String, String> p = new HashMap<>();
        p.put("name", "timeline");
        p.put("view.topic", "timeline");
        p.put("view.left.table", "public.posts");
        p.put("view.left.join.columns", "author_id");
        p.put("view.right.table", "public.follows");
        p.put("view.right.join.columns", "followee_id");
        p.put("view.columns", "follows.follower_id, posts.id AS post_id, posts.author_id, posts.body");
        p.put("view.key", "follower_id, post_id");
        p.put("replica.name", "timeline");
        return p;
    }

    @Test
    void theTimelineExampleParsesIntoItsJoin() {
        ViewDefinition v = new TableJoinConfig(timeline()).view();
        assertThat(v.type()).isEqualTo(JoinType.INNER);
        assertThat(v.encoding()).isEqualTo(Encoding.UPSERT);
        assertThat(v.columns()).containsExactly(new OutputColumn(false, "follower_id", "follower_id"),
                new OutputColumn(true, "id", "post_id"), new OutputColumn(true, "author_id", "author_id"),
                new OutputColumn(true, "body", "body"));
        assertThat(v.key()).containsExactly("follower_id", "post_id");
        assertThat(v.shapeProblems()).isEmpty();
        assertThat(v.encodingProblem()).isEmpty();
        // followee_id is not in the key, but it equals the author_id of the post that post_id names.
        assertThat(v.keyProblems(List.of("id"), List.of("follower_id", "followee_id"))).isEmpty();
        Map<String, String> p = timeline();
        p.put("view.key", "post_id");
        p.put("view.columns", "posts.id AS post_id, posts.author_id");
        assertThat(new TableJoinConfig(p).view().keyProblems(List.of("id"), List.of("follower_id", "followee_id")))
                .singleElement().asString().contains("'follower_id' is not in the key");
    }

    @Test
    void aKeyColumnThatAnUpdateCanChangeIsRefused() {
        Map<String, String> p = timeline();
        p.put("view.key", "follower_id, post_id, body");
        assertThat(new TableJoinConfig(p).view().keyProblems(List.of("id"), List.of("follower_id", "followee_id")))
                .singleElement().asString().contains("view.key 'body'").contains("remove it from view.key");
        p.put("view.key", "follower_id, post_id, author_id");
        assertThat(new TableJoinConfig(p).view().keyProblems(List.of("id"), List.of("follower_id", "followee_id")))
                .as("a join column is stable in an INNER view: a change of it deletes the old rows").isEmpty();
    }

    @Test
    void appendIsRefusedForAViewThatCanUpdateAndSaysWhy() {
        Map<String, String> p = timeline();
        p.put("view.encoding", "APPEND");
        assertThat(new TableJoinConfig(p).view().encodingProblem()).get().asString()
                .contains("public.posts (view.left.insert.only=false)").contains("Use UPSERT or RETRACT");
        p.put("view.left.insert.only", "true");
        p.put("view.right.insert.only", "true");
        assertThat(new TableJoinConfig(p).view().encodingProblem()).isEmpty();
        p.put("view.join.type", "LEFT");
        assertThat(new TableJoinConfig(p).view().encodingProblem()).get().asString().contains("cannot retract");
    }

    @Test
    void aLeftViewMustJoinOnTheRightKeyAndBeKeyedByLeftColumns() {
        Map<String, String> p = timeline();
        p.put("view.join.type", "LEFT");
        ViewDefinition v = new TableJoinConfig(p).view();
        assertThat(v.shapeProblems()).singleElement().asString().contains("'follower_id' is a column of the right table");
        assertThat(v.keyProblems(List.of("id"), List.of("follower_id", "followee_id"))).singleElement().asString()
                .contains("whole primary key");
    }

    @Test
    void badColumnsAndFiltersNameTheEntryAndTheForm() {
        Map<String, String> p = timeline();
        p.put("view.columns", "users.id");
        assertThatThrownBy(() -> new TableJoinConfig(p)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("neither view.left.table (posts) nor view.right.table (follows)");
        Map<String, String> q = timeline();
        q.put("view.filter", "posts.visibility");
        assertThatThrownBy(() -> new TableJoinConfig(q)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("table.column=value");
        Map<String, String> r = timeline();
        r.put("view.key", "follower_id, nope");
        assertThat(new TableJoinConfig(r).view().shapeProblems()).singleElement().asString().contains("'nope'");
    }
}
