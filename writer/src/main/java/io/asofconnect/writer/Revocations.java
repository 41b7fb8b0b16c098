package io.asofconnect.writer;

import org.apache.kafka.common.TopicPartition;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;

/**
 * The partitions whose {@code close} has begun. A flush commits only while none of its partitions is marked, and
 * marking waits for a commit in progress: once a partition is marked, no transaction that writes it commits.
 * Connect runs put, preCommit and close on one thread, so this is a guard for any other caller; what keeps a
 * task that lost its partitions from committing across workers is the epoch on the offsets row.
 */
public final class Revocations {
    private final Set<TopicPartition> revoked = new HashSet<>();

    public synchronized void revoke(Collection<TopicPartition> partitions) {
        revoked.addAll(partitions);
    }

    /** The partitions are this task's again (assigned anew). */
    public synchronized void admit(Collection<TopicPartition> partitions) {
        revoked.removeAll(partitions);
    }

    public synchronized boolean isRevoked(TopicPartition tp) {
        return revoked.contains(tp);
    }

    /** Commits, unless one of these partitions was revoked: then false, and the transaction is left to roll back. */
    synchronized boolean commitUnlessRevoked(Connection c, Collection<PartitionState> writing) throws SQLException {
        for (PartitionState s : writing) {
            if (revoked.contains(s.partition())) {
                return false;
            }
        }
        c.commit();
        return true;
    }

    public synchronized void clear() {
        revoked.clear();
    }
}
