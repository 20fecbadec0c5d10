package dev.dlock.transport;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Replica acknowledgement (Go's transport/ack.go): WAIT n timeout in the same pipeline after
 * each grant, extension and commit; the write counts only when the node reports at least n
 * replicas. A RELEASE is not acknowledged (losing one only leaves a lock to expire).
 *
 * @param replicas how many replicas a write waits for
 * @param timeout how long it waits
 * @param everywhere on every node; else on failover-managed nodes only (replica_ack "auto")
 */
public record Ack(int replicas, Duration timeout, boolean everywhere) {
    /**
     * How late a server may answer a blocked client's timeout: it checks them once per hz tick
     * (100 ms at the default hz 10).
     */
    public static final Duration TICK = Duration.ofMillis(100);

    /**
     * @param failoverManaged whether the node is a Cluster or Sentinel one (its
     *     {@code failoverManaged()}): the node's fact, not the node, so that ack stays below nodes
     * @return whether writes to the node wait for replicas
     */
    public boolean on(boolean failoverManaged) {
        return replicas > 0 && (everywhere || failoverManaged);
    }

    /** @return the time a call with an acknowledgement may take beyond its own */
    public Duration extra() {
        return timeout.plus(TICK);
    }

    /** @return the WAIT sent after a write */
    public List<String> await() {
        return List.of("WAIT", Integer.toString(replicas), Long.toString(timeout.toMillis()));
    }

    /**
     * Reads a write's replies (the write's, then the WAIT's): a write that wrote (a token, or 1)
     * and was acknowledged by too few replicas is node's failure.
     *
     * @param node the node's name
     * @param replies the write's reply, then the WAIT's
     * @return the failure, if any
     */
    public Optional<NodeFailure> check(String node, List<Object> replies) {
        if (replies.size() < 2 || !(replies.get(0) instanceof Long n) || n < 1) {
            return Optional.empty(); // nothing written: nothing to acknowledge
        }
        long acked = replies.get(1) instanceof Long a ? a : 0;
        if (acked >= replicas) {
            return Optional.empty();
        }
        return Optional.of(new NodeFailure(node, "written but only " + acked + " of " + replicas
                + " replicas acknowledged within " + Diagnosis.format(timeout)));
    }
}
