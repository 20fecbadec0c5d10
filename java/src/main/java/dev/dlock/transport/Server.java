package dev.dlock.transport;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.protocol.AsyncCommand;
import io.lettuce.core.protocol.Command;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import io.lettuce.core.protocol.RedisCommand;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One redis-server as a quorum node (Go's transport/server.go): one shared connection that
 * every call pipelines on (Lettuce writes a call's commands together and matches replies in
 * order), and a connection of its own for each server-side wait ({@link #callAlone}), taken from
 * a few idle ones ({@link WaitConnections}) or made. Connects lazily; each new connection's server
 * is identified before its first request; a broken or timed-out shared connection is dropped,
 * and the next call connects again.
 */
public final class Server implements Node {
    /** The name of a command as Lettuce sends it: any command, the module's too. */
    private static final class Keyword implements ProtocolKeyword {
        private final String text;

        Keyword(String text) {
            this.text = text;
        }

        @Override
        public byte[] getBytes() {
            return text.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String toString() {
            return text;
        }
    }

    private final String name;
    private final boolean tls;
    private final int db;
    private final RedisClient client;
    private final RedisURI uri;
    private final Duration setup;
    private final Identity identity;

    private final WaitConnections waits = new WaitConnections();
    private CompletableFuture<StatefulRedisConnection<String, String>> shared;
    private boolean closed;

    private Server(String name, boolean tls, int db, RedisClient client, RedisURI uri, Duration setup,
            Identity identity) {
        this.name = name;
        this.tls = tls;
        this.db = db;
        this.client = client;
        this.uri = uri;
        this.setup = setup;
        this.identity = identity;
    }

    /** A node over a single server's URL. */
    static Server ofUrl(Url u, Connect connect, Identity identity) {
        Duration t = connect.config().timeout();
        Url.HostPort at = u.addrs().isEmpty() ? null : u.addrs().get(0);
        RedisURI uri = Connect.uri(at, u.socket(), u.tls(), Connect.loginOf(connect.config(), u), u.db(),
                u.clientName(), t);
        return new Server(u.name(), u.tls(), u.db(), connect.client(u.tls(), t), uri, t, identity);
    }

    /** A node over host:port (a sentinel group's master, a cluster's master), database 0. */
    static Server dial(String name, Url.HostPort at, boolean tls, Connect.Login who, Connect connect,
            Identity identity) {
        Duration t = connect.config().timeout();
        RedisURI uri = Connect.uri(at, "", tls, who, 0, "", t);
        return new Server(name, tls, 0, connect.client(tls, t), uri, t, identity);
    }

    @Override
    public String name() {
        return name;
    }

    /** @return false: a plain master */
    @Override
    public boolean failoverManaged() {
        return false;
    }

    @Override
    public CompletableFuture<List<Object>> call(Duration connect, Duration whole, List<List<String>> commands) {
        return attempt(System.nanoTime(), connect, whole, commands, 0);
    }

    /**
     * The wait on an idle connection of this server's, or on a new one; the connection goes back
     * idle only after the whole reply was read. A timeout, a broken connection, or the returned
     * future cancelled closes it: that is what ends a wait still blocked on the server.
     */
    @Override
    public CompletableFuture<List<Object>> callAlone(Duration connect, Duration whole, List<List<String>> commands) {
        CompletableFuture<List<Object>> out = new CompletableFuture<>();
        AtomicReference<StatefulRedisConnection<String, String>> inUse = new AtomicReference<>();
        out.whenComplete((r, e) -> {
            if (out.isCancelled()) {
                closeIf(inUse.getAndSet(null));
            }
        });
        alone(System.nanoTime(), connect, whole, commands, true, out, inUse);
        return out;
    }

    /** One try of a wait (reuse: an idle connection may serve it), its outcome put in out. */
    private void alone(long start, Duration connect, Duration whole, List<List<String>> commands, boolean reuse,
            CompletableFuture<List<Object>> out, AtomicReference<StatefulRedisConnection<String, String>> inUse) {
        StatefulRedisConnection<String, String> idle = null;
        CompletableFuture<StatefulRedisConnection<String, String>> conn;
        synchronized (this) {
            if (closed) {
                out.completeExceptionally(new NodeFailure(name, "the lock manager is closed"));
                return;
            }
            idle = reuse ? waits.take() : null;
            conn = idle != null ? CompletableFuture.completedFuture(idle) : open();
        }
        boolean reused = idle != null;
        within(conn, left(start, connect)).whenComplete((c, err) -> {
            if (err != null) {
                conn.thenAccept(StatefulRedisConnection::closeAsync);
                out.completeExceptionally(connectFailure(err, connect));
                return;
            }
            inUse.set(c);
            if (out.isDone()) { // cancelled while connecting
                closeIf(inUse.getAndSet(null));
                return;
            }
            within(send(c, commands), left(start, whole)).whenComplete((replies, e) -> {
                // Whoever takes c out of inUse first, this or a cancel, decides what becomes of it.
                boolean mine = inUse.compareAndSet(c, null);
                if (e == null) {
                    if (mine) {
                        // The whole reply read: the connection is as new. Back before the caller
                        // hears, so that its next wait finds it.
                        waits.giveBack(c);
                    }
                    out.complete(replies);
                    return;
                }
                c.closeAsync(); // cut short: closing it ends a wait still blocked on the server
                if (reused && !Diagnosis.isTimeout(e) && left(start, connect).toNanos() > 0) {
                    // An idle connection found broken: the server restarted since. A wait is
                    // safe to send again by the same owner: once more, connected anew.
                    alone(start, connect, whole, commands, false, out, inUse);
                    return;
                }
                out.completeExceptionally(afterConnect(e, whole, !reused));
            });
        });
    }

    private static void closeIf(StatefulRedisConnection<String, String> c) {
        if (c != null) {
            c.closeAsync();
        }
    }

    /** One try on the shared connection; a connection found broken is replaced once. */
    private CompletableFuture<List<Object>> attempt(long start, Duration connect, Duration whole,
            List<List<String>> commands, int attempt) {
        CompletableFuture<StatefulRedisConnection<String, String>> conn;
        synchronized (this) {
            if (closed) {
                return CompletableFuture.failedFuture(new NodeFailure(name, "the lock manager is closed"));
            }
            if (shared == null) {
                shared = open();
            }
            conn = shared;
        }
        return within(conn, left(start, connect)).handle((c, err) -> {
            if (err != null) {
                drop(conn);
                throw failure(connectFailure(err, connect));
            }
            return within(send(c, commands), left(start, whole)).handle((replies, e) -> {
                if (e == null) {
                    return CompletableFuture.completedFuture(replies);
                }
                drop(conn);
                boolean retry = attempt == 0 && !Diagnosis.isTimeout(e) && left(start, connect).toNanos() > 0;
                if (retry) {
                    // A connection found broken: the server restarted since it was last used.
                    // Every request is safe to repeat by the same owner: once more, connected anew.
                    return attempt(start, connect, whole, commands, 1);
                }
                throw failure(afterConnect(e, whole, attempt > 0));
            }).thenCompose(f -> f);
        }).thenCompose(f -> f);
    }

    private NodeFailure connectFailure(Throwable err, Duration connect) {
        return Diagnosis.connectFailure(name, err, tls, connect, db);
    }

    /** Why a connected call failed: no reply in time, or the connection broke. */
    private NodeFailure afterConnect(Throwable e, Duration whole, boolean fresh) {
        if (Diagnosis.isTimeout(e)) {
            return new NodeFailure(name, "timed out after " + Diagnosis.format(whole), true, NodeFailure.Refused.NONE,
                    Diagnosis.unwrap(e));
        }
        return new NodeFailure(name, Diagnosis.broken(e, tls, fresh), false, NodeFailure.Refused.NONE,
                Diagnosis.unwrap(e));
    }

    private static CompletionException failure(NodeFailure f) {
        return new CompletionException(f);
    }

    /** The shared connection conn is dropped (broken, timed out, or never made). */
    private void drop(CompletableFuture<StatefulRedisConnection<String, String>> conn) {
        synchronized (this) {
            if (shared == conn) {
                shared = null;
            }
        }
        conn.thenAccept(StatefulRedisConnection::closeAsync);
    }

    /**
     * A new connection, its server identified before any request, all within the setup time
     * (a connection that completes after it is closed).
     */
    private CompletableFuture<StatefulRedisConnection<String, String>> open() {
        CompletableFuture<StatefulRedisConnection<String, String>> raw =
                client.connectAsync(StringCodec.UTF8, uri).toCompletableFuture();
        CompletableFuture<StatefulRedisConnection<String, String>> ready = raw.thenCompose(c -> {
            if (identity == null) {
                return CompletableFuture.completedFuture(c);
            }
            return identity.identify(args -> send(c, List.of(args)).thenApply(r -> r.get(0))).thenApply(v -> c);
        });
        ready = ready.orTimeout(setup.toMillis() * 2 + 100, TimeUnit.MILLISECONDS);
        ready.whenComplete((c, err) -> {
            if (err != null) {
                raw.thenAccept(StatefulRedisConnection::closeAsync);
            }
        });
        return ready;
    }

    /** Sends commands in one write on c; one reply each, an error reply as a value. */
    static CompletableFuture<List<Object>> send(StatefulRedisConnection<String, String> c, List<List<String>> commands) {
        List<AsyncCommand<String, String, Object>> sent = new ArrayList<>(commands.size());
        for (List<String> cmd : commands) {
            CommandArgs<String, String> args = new CommandArgs<>(StringCodec.UTF8);
            for (String a : cmd.subList(1, cmd.size())) {
                args.add(a);
            }
            sent.add(new AsyncCommand<>(new Command<>(new Keyword(cmd.get(0)), new ReplyOutput(), args)));
        }
        List<RedisCommand<String, String, ?>> batch = new ArrayList<>(sent);
        c.dispatch(batch);
        return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).thenApply(v -> {
            List<Object> replies = new ArrayList<>(sent.size());
            for (AsyncCommand<String, String, Object> s : sent) {
                replies.add(s.join());
            }
            return replies;
        });
    }

    /** f, or a TimeoutException after d (f itself is left as it is: it may be shared). */
    static <T> CompletableFuture<T> within(CompletableFuture<T> f, Duration d) {
        return f.copy().orTimeout(Math.max(d.toMillis(), 1), TimeUnit.MILLISECONDS);
    }

    /** What is left of d since start. */
    static Duration left(long start, Duration d) {
        return d.minusNanos(System.nanoTime() - start);
    }

    /**
     * Closes the connections without waiting for them; later calls fail. Safe on any thread: the
     * callbacks that drop a server (Sentinel's) run on the event loop, where a blocking close
     * waits for that same loop to close the channel and so never returns, stalling every
     * connection the loop serves (a manager's close then hung for good: ServerCloseTest).
     */
    public CompletableFuture<Void> closeAsync() {
        CompletableFuture<StatefulRedisConnection<String, String>> conn;
        synchronized (this) {
            if (closed) {
                return CompletableFuture.completedFuture(null);
            }
            closed = true;
            conn = shared;
            shared = null;
        }
        waits.close(); // the idle ones and the waits in flight close with the client's shutdown below
        if (conn != null) {
            conn.thenAccept(StatefulRedisConnection::closeAsync);
        }
        return client.shutdownAsync(0, 2, TimeUnit.SECONDS);
    }

    /** Closes the connections, waiting for them at most 3 s (never on an event loop: {@link #closeAsync}). */
    @Override
    public void close() {
        Connect.await(closeAsync());
    }
}
