package dev.dlock.transport;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One member of the quorum: a server, a cluster or a sentinel-managed master (Go's
 * transport.Node in nodes.go). Every reply is a value: a bulk or status as String, an integer
 * as Long, nil as null, an array as List, an error reply as a {@link RedisError}. A call's
 * future fails only with a {@link NodeFailure}.
 */
public interface Node extends AutoCloseable {
    /** @return how the node is named in errors (its URL, password hidden) */
    String name();

    /**
     * @return the node's data moves to a replica on failover (a cluster or a sentinel-managed
     *     master): replica acknowledgement "auto" applies to it
     */
    boolean failoverManaged();

    /**
     * Sends commands (the first one's key picks a cluster's master) pipelined in one round trip
     * on the node's shared connection: connected within connect, the replies within whole (both
     * counted from the start). Not for a command the server blocks on: see {@link #callAlone}.
     *
     * @param connect the time to connect (the handshake, login and identification included)
     * @param whole the time for the whole call
     * @param commands each command, its name first
     * @return one reply per command, or a failure with a {@link NodeFailure}
     */
    CompletableFuture<List<Object>> call(Duration connect, Duration whole, List<List<String>> commands);

    /**
     * As {@link #call}, on a connection of its own for this call: for a server-side wait
     * ({@code DLOCK.ACQUIRE ... WAIT t}, {@code DLOCK.OBSERVE}), which blocks the connection it is
     * sent on. The connection is an idle one of the server's or a new one, and is kept for the
     * next wait only once its reply was read in full (Go's pool, Rust's idle wait connections). A
     * wait that runs out of whole, or whose future is cancelled, closes its connection, which
     * ends the wait on the server.
     *
     * @param connect the time to connect
     * @param whole the time for the whole call
     * @param commands each command, its name first
     * @return one reply per command, or a failure with a {@link NodeFailure}
     */
    CompletableFuture<List<Object>> callAlone(Duration connect, Duration whole, List<List<String>> commands);

    /** Closes its connections; later calls fail ("the lock manager is closed"). */
    @Override
    void close();

    /**
     * The node a parsed URL names, its servers claimed for identity's node; nothing connects
     * until the first call.
     *
     * @param url the node's URL
     * @param connect the manager's shared resources and config
     * @param identity the node's place in the manager's registry (null: not checked)
     * @return the node
     */
    static Node open(Url url, Connect connect, Identity identity) {
        return switch (url.form()) {
            case CLUSTER -> new Cluster(url, connect, identity);
            case SENTINEL -> new Sentinel(url, connect, identity);
            case SINGLE -> Server.ofUrl(url, connect, identity);
        };
    }
}
