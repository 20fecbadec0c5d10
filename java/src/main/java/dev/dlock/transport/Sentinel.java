package dev.dlock.transport;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

/**
 * A Sentinel-managed master as one quorum node (Go's transport/sentinel.go): the sentinels are
 * asked in turn (SENTINEL MASTER name; the one that answered first next time), the server they
 * name is checked with ROLE (a sentinel can name a master a failover has just demoted), and the
 * master found is kept until a call finds it down or read-only. The URL's login is the
 * master's; the sentinels' own is the config's. The group's masters share the node's one
 * {@link Identity}: a failover's new master takes the claim over.
 *
 * <p>Lettuce's own Sentinel support (RedisURI with sentinels) is not used: it neither checks the
 * named master's ROLE nor lets a connection be identified before its first request.
 */
final class Sentinel implements Node {
    private final String name;
    private final String service;
    private final boolean tls;
    private final Connect connect;
    private final Connect.Login master;
    private final Identity identity;
    private final RedisClient asking;

    private final List<Url.HostPort> sentinels;
    private Server current;
    private CompletableFuture<Server> resolving;
    private boolean closed;

    Sentinel(Url u, Connect connect, Identity identity) {
        this.name = u.name();
        this.service = u.service();
        this.tls = u.tls();
        this.connect = connect;
        this.master = Connect.loginOf(connect.config(), u);
        this.identity = identity;
        this.sentinels = new ArrayList<>(u.addrs());
        this.asking = connect.client(tls, connect.config().timeout());
    }

    @Override
    public String name() {
        return name;
    }

    /** @return true: the sentinels fail the master over to a replica */
    @Override
    public boolean failoverManaged() {
        return true;
    }

    @Override
    public CompletableFuture<List<Object>> call(Duration connect, Duration whole, List<List<String>> commands) {
        return through(connect, m -> m.call(connect, whole, commands));
    }

    @Override
    public CompletableFuture<List<Object>> callAlone(Duration connect, Duration whole, List<List<String>> commands) {
        return through(connect, m -> m.callAlone(connect, whole, commands));
    }

    /** A call to the master the sentinels name now; a master down or demoted is forgotten. */
    private CompletableFuture<List<Object>> through(Duration within,
            java.util.function.Function<Server, CompletableFuture<List<Object>>> call) {
        return masterNode(within).thenCompose(m -> call.apply(m).handle((replies, err) -> {
            NodeFailure f = err == null ? null : Diagnosis.find(err, NodeFailure.class);
            if (err != null && f == null) {
                throw new CompletionException(err);
            }
            if (f == null && !replies.isEmpty() && replies.get(0) instanceof RedisError e
                    && e.text().startsWith("READONLY")) {
                f = new NodeFailure(m.name(), e.text());
            }
            if (f == null) {
                return replies;
            }
            if (!f.reason().startsWith("timed out")) {
                forget(m); // down or demoted: ask the sentinels again next time
            }
            throw new CompletionException(f.as(name, m.name() + ": "));
        }));
    }

    private synchronized void forget(Server m) {
        if (current == m) {
            current = null;
            m.closeAsync(); // on the event loop (a call's callback): never a blocking close there
        }
    }

    /** The master the sentinels name (kept until a call finds it down or demoted). */
    private CompletableFuture<Server> masterNode(Duration within) {
        CompletableFuture<Server> r;
        synchronized (this) {
            if (closed) {
                return CompletableFuture.failedFuture(new NodeFailure(name, "the lock manager is closed"));
            }
            if (current != null) {
                return CompletableFuture.completedFuture(current);
            }
            if (resolving != null) {
                return resolving;
            }
            r = resolve(0, within, new ArrayList<>());
            resolving = r;
        }
        r.whenComplete((m, err) -> keep(r, m));
        return r;
    }

    private synchronized void keep(CompletableFuture<Server> r, Server m) {
        if (resolving == r) {
            resolving = null;
        }
        if (m != null && closed) {
            m.closeAsync(); // a callback's thread
        } else if (m != null) {
            current = m;
        }
    }

    /** Asks the sentinels in turn from the i-th: the master found, or what each said. */
    private CompletableFuture<Server> resolve(int i, Duration within, List<String> said) {
        Url.HostPort at;
        synchronized (this) {
            if (i >= sentinels.size()) {
                return CompletableFuture.failedFuture(new NodeFailure(name, "no sentinel names a master for "
                        + UrlParser.quote(service) + ": " + String.join("; ", said)));
            }
            at = sentinels.get(i);
        }
        return ask(at, within).thenCompose(answer -> {
            if (answer.why() != null) {
                said.add("sentinel " + at + ": " + answer.why());
                return resolve(i + 1, within, said);
            }
            first(i);
            return checkRole(answer.addr(), at, within, said);
        });
    }

    /** The server named master answers ROLE as one, else the resolution fails. */
    private CompletableFuture<Server> checkRole(Url.HostPort addr, Url.HostPort at, Duration within,
            List<String> said) {
        Server m = Server.dial("master " + addr, addr, tls, master, connect, identity);
        return m.call(within, within, List.of(List.of("ROLE"))).handle((role, err) -> {
            Object r = role == null ? null : role.get(0);
            if (r instanceof List<?> l && !l.isEmpty() && "master".equals(l.get(0))) {
                return m;
            }
            m.closeAsync(); // a callback's thread
            NodeFailure f = err == null ? null : Diagnosis.find(err, NodeFailure.class);
            String what = f != null ? "unreachable (" + f.reason() + ")"
                    : r instanceof List<?> l && !l.isEmpty() ? "a " + l.get(0) + " (a failover under way?)" : "unreachable";
            said.add(addr + ", named master by sentinel " + at + ", is " + what);
            throw new CompletionException(new NodeFailure(name, "no sentinel names a master for "
                    + UrlParser.quote(service) + ": " + String.join("; ", said), false, NodeFailure.Refused.NONE, err));
        });
    }

    /** The sentinel that answered is asked first next time. */
    private synchronized void first(int i) {
        if (i > 0 && i < sentinels.size()) {
            sentinels.add(0, sentinels.remove(i));
        }
    }

    /** One sentinel's answer: the master's address, or why not. */
    record Answer(Url.HostPort addr, String why) {}

    private CompletableFuture<Answer> ask(Url.HostPort at, Duration within) {
        Config conf = connect.config();
        Connect.Login login = new Connect.Login(conf.sentinelUsername(), conf.sentinelPassword());
        var uri = Connect.uri(at, "", tls, login, 0, "", within);
        CompletableFuture<StatefulRedisConnection<String, String>> conn =
                Server.within(asking.connectAsync(StringCodec.UTF8, uri).toCompletableFuture(), within);
        return conn.thenCompose(c -> Server.within(Server.send(c, List.of(List.of("SENTINEL", "MASTER", service))),
                within).whenComplete((r, e) -> c.closeAsync())).handle((replies, err) -> {
                    if (err != null) {
                        String why = Diagnosis.explain(err, tls, within);
                        return new Answer(null, why != null ? why : "cannot connect: " + Diagnosis.describe(err, within));
                    }
                    return masterAddress(service, replies.get(0));
                });
    }

    /** Reads SENTINEL MASTER's reply: the master's address, or why this sentinel gives none. */
    static Answer masterAddress(String service, Object reply) {
        if (reply instanceof RedisError e) {
            return new Answer(null, e.text());
        }
        Map<String, String> fields = new HashMap<>();
        if (reply instanceof List<?> list) {
            for (int i = 0; i + 1 < list.size(); i += 2) {
                fields.put(String.valueOf(list.get(i)), String.valueOf(list.get(i + 1)));
            }
        }
        String ip = fields.getOrDefault("ip", "");
        String port = fields.getOrDefault("port", "");
        if (ip.isEmpty() || !port.matches("[0-9]{1,5}")) {
            return new Answer(null, "unexpected SENTINEL MASTER reply for " + UrlParser.quote(service));
        }
        Url.HostPort addr = new Url.HostPort(ip, Integer.parseInt(port));
        String flags = fields.getOrDefault("flags", "");
        boolean isMaster = false;
        for (String f : flags.split(",")) {
            if (f.equals("s_down") || f.equals("o_down")) {
                return new Answer(null, "sees " + addr + " as " + flags);
            }
            isMaster |= f.equals("master");
        }
        return isMaster ? new Answer(addr, null) : new Answer(null, "sees " + addr + " as " + flags);
    }

    /** Closes the master's connections. */
    @Override
    public void close() {
        Server m;
        synchronized (this) {
            closed = true;
            m = current;
            current = null;
        }
        if (m != null) {
            m.close();
        }
        Connect.await(asking.shutdownAsync(0, 2, TimeUnit.SECONDS));
    }
}
