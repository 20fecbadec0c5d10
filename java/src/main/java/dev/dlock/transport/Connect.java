package dev.dlock.transport;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.SslOptions;
import io.lettuce.core.SslVerifyMode;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.protocol.ProtocolVersion;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * What a manager's nodes share to reach their servers (connect.go's part that Go's redigo needs
 * no object for): the {@link Config} and one Lettuce {@link ClientResources} (one event loop
 * group, one timer) for every node, shut down by {@link #close()} after the nodes are closed.
 */
public final class Connect implements AutoCloseable {
    private final Config config;
    private final ClientResources resources;

    /**
     * Shared resources for nodes reached as config says.
     *
     * @param config timeouts, TLS and logins
     */
    public Connect(Config config) {
        this.config = config;
        this.resources = DefaultClientResources.builder().build();
        warm();
    }

    /**
     * Starts the event loop and loads Netty's channel classes with one connection attempt to a
     * loopback port nothing listens on: done the first time in a call, that takes a second or
     * two on a loaded machine and would eat the first call's connect budget (a 500 ms node
     * timeout made a refused connection look like a timeout). Its outcome is not used: it is a
     * refusal by design.
     */
    private void warm() {
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        } catch (java.io.IOException e) {
            return; // no loopback port to try: the first call pays the warm-up instead
        }
        RedisClient c = client(false, Duration.ofSeconds(5));
        try {
            c.connectAsync(io.lettuce.core.codec.StringCodec.UTF8, RedisURI.create("127.0.0.1", port))
                    .toCompletableFuture().handle((conn, err) -> conn == null ? null : conn.closeAsync())
                    .get(10, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            // The refusal expected, or a slow one: either way the classes are loaded now.
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            await(c.shutdownAsync(0, 2, TimeUnit.SECONDS));
        }
    }

    /** @return the config */
    public Config config() {
        return config;
    }

    /** A user and password ("" for none). */
    record Login(String user, String password) {
        @Override
        public String toString() {
            return "Login[" + user + "]";
        }
    }

    /** The URL's login, else the configured one (Go's loginOf). */
    static Login loginOf(Config conf, Url u) {
        return u.hasLogin() ? new Login(u.username(), u.password()) : new Login(conf.username(), conf.password());
    }

    /**
     * A Lettuce client for one server: RESP2 (the replies every client reads; see
     * {@link ReplyOutput}), no reconnecting behind the transport's back (a new connection is
     * identified before its first request, and a broken one is replaced by the next call), no
     * command timeout of Lettuce's (a server-side wait may block longer; each call has its own),
     * connecting bounded by within.
     */
    RedisClient client(boolean tls, Duration within) {
        RedisClient c = RedisClient.create(resources);
        ClientOptions.Builder o = ClientOptions.builder()
                .protocolVersion(ProtocolVersion.RESP2)
                .autoReconnect(false)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.builder().timeoutCommands(false).build())
                .socketOptions(SocketOptions.builder().connectTimeout(within).build());
        if (tls) {
            o.sslOptions(sslOptions());
        }
        c.setOptions(o.build());
        return c;
    }

    private SslOptions sslOptions() {
        Config.TlsFiles f = config.tls();
        SslOptions.Builder b = SslOptions.builder().jdkSslProvider();
        if (f.ca() != null) {
            b.trustManager(f.ca().toFile());
        }
        if (f.cert() != null) {
            b.keyManager(f.cert().toFile(), f.key().toFile(), null);
        }
        return b.build();
    }

    /**
     * The URI of one server: at host:port (or a unix socket), TLS checking the host name, the
     * login, a database and client name.
     */
    static RedisURI uri(Url.HostPort at, String socket, boolean tls, Login who, int db, String clientName,
            Duration within) {
        RedisURI.Builder b = socket.isEmpty()
                ? RedisURI.builder().withHost(at.host()).withPort(at.port())
                : RedisURI.Builder.socket(socket);
        b.withSsl(tls).withVerifyPeer(SslVerifyMode.FULL).withTimeout(within).withDatabase(db);
        if (!clientName.isEmpty()) {
            b.withClientName(clientName);
        }
        if (!who.user().isEmpty()) {
            b.withAuthentication(who.user(), who.password().toCharArray());
        } else if (!who.password().isEmpty()) {
            b.withPassword(who.password().toCharArray());
        }
        return b.build();
    }

    /**
     * Waits for a client's shutdown (or a connection's close) at most 3 s: Lettuce's blocking
     * {@code shutdown} waits without a bound, and a close that cannot finish (a channel whose
     * event loop is stuck) must not hold the manager's close for ever. What is not closed in time
     * ends with the event loops ({@link #close()}).
     */
    static void await(CompletableFuture<Void> closing) {
        try {
            closing.get(3, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // Not closed in time, or a channel that failed to close: the event loops end it.
        }
    }

    /** Shuts the event loops down (after every node is closed). */
    @Override
    public void close() {
        resources.shutdown(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(3, TimeUnit.SECONDS);
    }
}
