package io.asofconnect.tablejoin;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What the view is: {@code SELECT columns FROM left [LEFT] JOIN right ON left.j1 = right.k1 AND ...} with each side
 * restricted by its filters, keyed by {@code key} (names of output columns), published in {@code encoding}.
 */
public record ViewDefinition(ViewSide left, ViewSide right, JoinType type, List<OutputColumn> columns, List<String> key,
                             Encoding encoding) {

    public ViewDefinition {
        columns = List.copyOf(columns);
        key = List.copyOf(key);
    }

    public ViewSide side(boolean isLeft) {
        return isLeft ? left : right;
    }

    /** Why {@code encoding} cannot carry this view, or empty. */
    public Optional<String> encodingProblem() {
        if (encoding != Encoding.APPEND) {
            return Optional.empty();
        }
        if (type == JoinType.LEFT) {
            return Optional.of("view.encoding APPEND cannot carry a LEFT view: when a left row gets its first match, its row"
                    + " with NULL right columns must be retracted, and an append-only stream cannot retract. Use UPSERT or RETRACT");
        }
        List<String> updatable = new ArrayList<>();
        if (!left.insertOnly()) {
            updatable.add(left.table() + " (view.left.insert.only=false)");
        }
        if (!right.insertOnly()) {
            updatable.add(right.table() + " (view.right.insert.only=false)");
        }
        if (!updatable.isEmpty()) {
            return Optional.of("view.encoding APPEND needs a view that can never update or delete a row, but "
                    + String.join(" and ", updatable) + " can update or delete rows, and each such change updates or"
                    + " deletes view rows. Use UPSERT or RETRACT, or declare the table insert-only if it truly is");
        }
        return Optional.empty();
    }

    /** Why the columns and key do not describe this join, or empty; needs no database. */
    public List<String> shapeProblems() {
        List<String> problems = new ArrayList<>();
        if (left.table().equalsIgnoreCase(right.table())) {
            problems.add("view.left.table and view.right.table are both " + left.table() + "; a self-join is not supported");
        }
        if (left.joinColumns().size() != right.joinColumns().size()) {
            problems.add("view.left.join.columns names " + left.joinColumns().size() + " columns and view.right.join.columns "
                    + right.joinColumns().size() + "; they are compared in pairs, so give both the same number");
        }
        Set<String> names = new HashSet<>();
        for (OutputColumn c : columns) {
            if (!names.add(c.name())) {
                problems.add("view.columns names the output column '" + c.name() + "' twice; rename one with AS");
            }
        }
        for (String k : key) {
            if (!names.contains(k)) {
                problems.add("view.key names '" + k + "', which is not an output column of view.columns " + names);
            }
        }
        if (key.isEmpty()) {
            problems.add("view.key is empty; name the output columns that identify a view row");
        }
        if (type == JoinType.LEFT) {
            for (String k : key) {
                column(k).filter(c -> !c.left()).ifPresent(c -> problems.add("view.key '" + k + "' is a column of the right table;"
                        + " in a LEFT view a left row without a match has it NULL, which a key cannot be: key a LEFT view by left columns"));
            }
        }
        return problems;
    }

    /**
     * Why the key does not identify a view row, given the tables' primary keys, or empty. A view row is one left row
     * and one right row, so the key must determine both primary keys: each primary-key column is a key column, or a
     * join column whose partner on the other side is a key column.
     */
    public List<String> keyProblems(List<String> leftPrimaryKey, List<String> rightPrimaryKey) {
        List<String> problems = new ArrayList<>();
        if (type == JoinType.LEFT && !new HashSet<>(right.joinColumns()).equals(new HashSet<>(rightPrimaryKey))) {
            problems.add("a LEFT view must join on the right table's whole primary key " + rightPrimaryKey + " (it joins on "
                    + right.joinColumns() + "), so that each left row has at most one match and the view key is the left"
                    + " row's; use INNER for a one-to-many join");
            return problems;
        }
        for (String k : key) {
            Optional<OutputColumn> c = column(k);
            if (c.isEmpty()) {
                continue;
            }
            ViewSide side = side(c.get().left());
            List<String> pk = c.get().left() ? leftPrimaryKey : rightPrimaryKey;
            boolean stable = pk.contains(c.get().column()) || (type == JoinType.INNER && side.joinColumns().contains(c.get().column()));
            if (!stable) {
                problems.add("view.key '" + k + "' is " + side.table() + "." + c.get().column() + ", which is not a primary-key column"
                        + (type == JoinType.INNER ? " or a join column" : "") + ": an update of it would move the row to another key"
                        + " and leave the old one behind; remove it from view.key");
            }
        }
        boolean leftByKey = leftPrimaryKey.stream().allMatch(c -> keyHas(true, c));
        boolean rightByKey = rightPrimaryKey.stream().allMatch(c -> keyHas(false, c));
        problems.addAll(uncovered(true, leftPrimaryKey, rightByKey));
        if (type == JoinType.INNER) {
            problems.addAll(uncovered(false, rightPrimaryKey, leftByKey));
        }
        return problems;
    }

    /**
     * A primary-key column is determined by the key when it is a key column, or when it is a join column whose partner
     * is: a key column, or a column of the other row when the key holds that row's whole primary key.
     */
    private List<String> uncovered(boolean isLeft, List<String> primaryKey, boolean otherByKey) {
        List<String> problems = new ArrayList<>();
        ViewSide side = side(isLeft);
        ViewSide other = side(!isLeft);
        for (String pk : primaryKey) {
            if (keyHas(isLeft, pk)) {
                continue;
            }
            int pair = side.joinColumns().indexOf(pk);
            if (pair >= 0 && pair < other.joinColumns().size() && (otherByKey || keyHas(!isLeft, other.joinColumns().get(pair)))) {
                continue;
            }
            problems.add("view.key does not determine the row of " + side.table() + ": its primary-key column '" + pk
                    + "' is not in the key; add it to view.columns and view.key");
        }
        return problems;
    }

    private boolean keyHas(boolean isLeft, String column) {
        for (String k : key) {
            Optional<OutputColumn> c = column(k);
            if (c.isPresent() && c.get().left() == isLeft && c.get().column().equals(column)) {
                return true;
            }
        }
        return false;
    }

    public Optional<OutputColumn> column(String name) {
        return columns.stream().filter(c -> c.name().equals(name)).findFirst();
    }

    /** The tables by schema-qualified name, for the replica. */
    public Map<String, ViewSide> tables() {
        return Map.of(left.table(), left, right.table(), right);
    }
}
