package io.asofconnect.transforms;

import io.asofconnect.common.lookup.VersionLookup;

import java.util.Map;

/** Where {@link AsOfEnrich} gets its replica from: one lease per configured transform instance. */
interface LookupSource {

    /** A replica to read from, and how to give it back. */
    interface Lease extends AutoCloseable {
        VersionLookup lookup();

        /** Releases this transform's hold on the replica; the replica stops when its last holder releases it. */
        @Override
        void close();
    }

    /** Acquires the replica named by {@code props} (the transform's whole configuration). */
    Lease acquire(Map<String, ?> props);
}
