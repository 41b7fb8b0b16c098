package io.asofconnect.windowjoin;

/** The plugin's version, from the jar's manifest. */
final class Versions {
    static final String VERSION = version();

    private Versions() {
    }

    private static String version() {
        String v = Versions.class.getPackage().getImplementationVersion();
        return v != null ? v : "0.1.0-SNAPSHOT";
    }
}
