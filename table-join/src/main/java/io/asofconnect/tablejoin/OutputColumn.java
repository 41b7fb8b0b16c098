package io.asofconnect.tablejoin;

import java.util.Locale;

/**
 * One column of the view: {@code column} of the left or right table, named {@code name} in the view.
 * Written in {@code view.columns} as {@code table.column} or {@code table.column AS name}, where {@code table} is the
 * table's name without its schema.
 */
public record OutputColumn(boolean left, String column, String name) {

    /** Parses one entry of {@code view.columns}; {@code left} and {@code right} are the tables' unqualified names. */
    static OutputColumn parse(String text, String leftName, String rightName) {
        String s = text.trim();
        String name = null;
        String[] parts = s.split("(?i)\\s+as\\s+");
        if (parts.length == 2) {
            s = parts[0].trim();
            name = parts[1].trim();
        } else if (parts.length > 2) {
            throw new IllegalArgumentException("'" + text + "' names the column twice; write table.column [AS name]");
        }
        int dot = s.indexOf('.');
        if (dot <= 0 || dot == s.length() - 1 || s.indexOf('.', dot + 1) >= 0) {
            throw new IllegalArgumentException("'" + text + "' is not table.column [AS name] (table without its schema, e.g. posts.id)");
        }
        String table = s.substring(0, dot);
        String column = s.substring(dot + 1);
        boolean isLeft = table.toLowerCase(Locale.ROOT).equals(leftName.toLowerCase(Locale.ROOT));
        boolean isRight = table.toLowerCase(Locale.ROOT).equals(rightName.toLowerCase(Locale.ROOT));
        if (isLeft == isRight) {
            throw new IllegalArgumentException("'" + text + "' names table '" + table + "', which is neither view.left.table ("
                    + leftName + ") nor view.right.table (" + rightName + ")");
        }
        return new OutputColumn(isLeft, column, name == null || name.isEmpty() ? column : name);
    }
}
