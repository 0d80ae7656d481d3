package io.rdmastore.client;

import java.util.List;

/**
 * What the client found when it last discovered its replica set (or, for a single host, that host). Immutable.
 *
 * @param setName the replica set's name; empty for a single host
 * @param term the primary's election term as reported by the member that named it; 0 for a single host
 * @param primaryId the primary's member id; empty when unknown or for a single host
 * @param primaryAddress {@code host:port} the client sends writes to
 * @param members every member, as the set reports them (the single host for a single-host client)
 * @param secondaryAddress {@code host:port} of the secondary that serves reads, or empty when reads go to the primary
 */
public record Topology(String setName, long term, String primaryId, String primaryAddress, List<Member> members,
                       String secondaryAddress) {
    /** One member of the set. */
    public record Member(String id, String address) {
    }

    public Topology {
        members = List.copyOf(members);
    }

    /** Whether this is a replica set (as opposed to a single host). */
    public boolean isReplicaSet() {
        return !setName.isEmpty();
    }
}
