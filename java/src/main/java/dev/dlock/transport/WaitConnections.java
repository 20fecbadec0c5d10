package dev.dlock.transport;

import io.lettuce.core.api.StatefulRedisConnection;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * A server's idle connections for server-side waits ({@link Server#callAlone}), as Go's pool
 * (transport/server.go) and Rust's idle_for_waits (client/src/transport/server.rs) keep them: a
 * new connection costs a TCP connect, the login and the identity check ({@code DLOCK.RUNID}),
 * which throttled contended handoffs when every wait paid it (docs/bench/java.md). Only a
 * connection whose wait was answered in full comes back: one cut short (timed out, broken,
 * cancelled) is in an unknown state, and closing it is what ends its wait on the server.
 */
final class WaitConnections {
    /**
     * Idle connections kept; a burst beyond it makes more, closed after use. A manager sends one
     * server wait per resource at a time (its other callers queue in the process), so this covers
     * the resources one manager waits on at once.
     */
    static final int IDLE = 8;

    private final ArrayDeque<StatefulRedisConnection<String, String>> idle = new ArrayDeque<>();
    private boolean closed;

    /** @return an idle connection still open (the most recently used), or null: make one */
    StatefulRedisConnection<String, String> take() {
        List<StatefulRedisConnection<String, String>> dead = new ArrayList<>();
        StatefulRedisConnection<String, String> c = null;
        synchronized (this) {
            while (!closed && c == null && !idle.isEmpty()) {
                StatefulRedisConnection<String, String> next = idle.pop();
                if (next.isOpen()) {
                    c = next;
                } else {
                    dead.add(next); // the server closed it while idle (restart, client timeout)
                }
            }
        }
        dead.forEach(StatefulRedisConnection::closeAsync);
        return c;
    }

    /** Keeps c, whose last call was answered in full, unless the pool is closed or full. */
    void giveBack(StatefulRedisConnection<String, String> c) {
        synchronized (this) {
            if (!closed && c.isOpen() && idle.size() < IDLE) {
                idle.push(c);
                return;
            }
        }
        c.closeAsync();
    }

    /**
     * Forgets the idle connections, for the server's client shutdown to close with every other
     * one (closing them here as well would close each twice); any given back later is closed.
     */
    synchronized void close() {
        closed = true;
        idle.clear();
    }
}
