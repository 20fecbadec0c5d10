package dev.dlock.transport;

import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * A whole Redis Cluster as one quorum node (Go's transport/cluster.go): the slot map is read
 * with CLUSTER SLOTS (from the seed or a known master), each call goes to the master serving
 * its first key's slot (CRC16 of the key or its {hash tag}: Lettuce's {@link SlotHash}), MOVED
 * reads the map again and follows, ASK sends ASKING first on a connection of its own at the
 * target; a master found down makes the next call read the map again (a failover).
 *
 * <p>Each master is a {@link Server} of its own (its shared connection, its idle connections for
 * waits and ASK's sends, its identity claimed for this node). ASKING holds for the one command
 * after it, so a connection ASK used is clean once the reply is read and is kept like a wait's. Lettuce's RedisClusterClient is not used: it routes each
 * command by its own key, so a write's keyless WAIT would go to another node, and it makes node
 * connections where none can be identified before its first request.
 */
public final class Cluster implements Node {
    /** How many MOVED / ASK a call follows. */
    static final int MAX_REDIRECTS = 5;

    private final String name;
    private final boolean tls;
    private final Url.HostPort seed;
    private final Connect connect;
    private final Connect.Login login;
    private final Identity identity;

    private final Map<String, Server> masters = new HashMap<>();
    private final Map<String, Url.HostPort> addresses = new HashMap<>();
    private String[] slots; // the master's address per slot; null: read the map first
    private boolean closed;

    Cluster(Url u, Connect connect, Identity identity) {
        this.name = u.name();
        this.tls = u.tls();
        this.seed = u.addrs().get(0);
        this.connect = connect;
        this.login = Connect.loginOf(connect.config(), u);
        this.identity = identity;
    }

    /**
     * @param key a key
     * @return its Redis Cluster hash slot (of its hash tag, when it has one)
     */
    public static int keySlot(String key) {
        return SlotHash.getSlot(key.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String name() {
        return name;
    }

    /** @return true: a master's replica takes over its slots */
    @Override
    public boolean failoverManaged() {
        return true;
    }

    @Override
    public CompletableFuture<List<Object>> call(Duration connect, Duration whole, List<List<String>> commands) {
        return route(connect, whole, commands, false);
    }

    @Override
    public CompletableFuture<List<Object>> callAlone(Duration connect, Duration whole, List<List<String>> commands) {
        return route(connect, whole, commands, true);
    }

    private CompletableFuture<List<Object>> route(Duration connect, Duration whole, List<List<String>> commands,
            boolean alone) {
        long start = System.nanoTime();
        int slot = keySlot(routingKey(commands.get(0)));
        return mapSlots(connect).thenCompose(v -> follow(start, connect, whole, commands, alone, slot, null, 0));
    }

    /** One send to the slot's master (or to an ASK target), following redirects. */
    private CompletableFuture<List<Object>> follow(long start, Duration connect, Duration whole,
            List<List<String>> commands, boolean alone, int slot, Url.HostPort ask, int redirects) {
        if (redirects > MAX_REDIRECTS) {
            return CompletableFuture.failedFuture(new NodeFailure(name, "more than " + MAX_REDIRECTS
                    + " redirects for " + UrlParser.quote(routingKey(commands.get(0)))));
        }
        Url.HostPort at = ask != null ? ask : masterOf(slot);
        if (at == null) {
            return CompletableFuture.failedFuture(new NodeFailure(name, "slot " + slot + " is not served"));
        }
        Server m = server(at);
        Duration c = Server.left(start, connect);
        Duration w = Server.left(start, whole);
        CompletableFuture<List<Object>> sent;
        if (ask != null) {
            List<List<String>> asking = new ArrayList<>();
            asking.add(List.of("ASKING"));
            asking.addAll(commands);
            sent = m.callAlone(c, w, asking).thenApply(r -> r.subList(1, r.size()));
        } else {
            sent = alone ? m.callAlone(c, w, commands) : m.call(c, w, commands);
        }
        return sent.handle((replies, err) -> {
            if (err != null) {
                throw new CompletionException(failed(at, err));
            }
            String redirect = replies.get(0) instanceof RedisError e ? e.text() : "";
            if (redirect.startsWith("MOVED ") || redirect.startsWith("ASK ")) {
                String[] parts = redirect.split(" ");
                Url.HostPort target = hostPort(parts[2]);
                if (redirect.startsWith("MOVED ")) {
                    moved(slot, target); // the slot's new master; the whole map is read again next call
                    return follow(start, connect, whole, commands, alone, slot, null, redirects + 1);
                }
                return follow(start, connect, whole, commands, alone, slot, target, redirects + 1);
            }
            return CompletableFuture.completedFuture(replies);
        }).thenCompose(f -> f);
    }

    /** A master that gave no answer may have failed over; the next call reads the map. */
    private NodeFailure failed(Url.HostPort at, Throwable err) {
        NodeFailure f = Diagnosis.find(err, NodeFailure.class);
        if (f == null) {
            f = new NodeFailure(at.toString(), Diagnosis.describe(err, Duration.ZERO), false, NodeFailure.Refused.NONE,
                    Diagnosis.unwrap(err));
        }
        if (!f.noReply()) {
            unmap();
        }
        return f.as(name, "master " + at + ": ");
    }

    /**
     * The key whose slot a command goes to: the first, after numkeys for a set's DLOCK.*ALL
     * commands (whose keys share one slot: a set across slots goes one group at a time).
     */
    static String routingKey(List<String> cmd) {
        String c = cmd.get(0).toUpperCase(Locale.ROOT);
        if (cmd.size() > 2 && c.startsWith("DLOCK.") && c.endsWith("ALL")) {
            return cmd.get(2);
        }
        return cmd.size() > 1 ? cmd.get(1) : "";
    }

    /** Reads the slot map if it is not known (first use, or a master found down). */
    private CompletableFuture<Void> mapSlots(Duration within) {
        List<Url.HostPort> from = new ArrayList<>();
        synchronized (this) {
            if (closed) {
                return CompletableFuture.failedFuture(new NodeFailure(name, "the lock manager is closed"));
            }
            if (slots != null) {
                return CompletableFuture.completedFuture(null);
            }
            from.add(seed);
            for (String a : masters.keySet()) {
                if (!a.equals(seed.toString())) {
                    from.add(addresses.get(a));
                }
            }
        }
        return readMap(from, 0, within, new ArrayList<>());
    }

    private CompletableFuture<Void> readMap(List<Url.HostPort> from, int i, Duration within, List<String> said) {
        if (i >= from.size()) {
            return CompletableFuture.failedFuture(new NodeFailure(name, "cannot read the slot map ("
                    + String.join("; ", said) + ")"));
        }
        Url.HostPort at = from.get(i);
        return server(at).call(within, within, List.of(List.of("CLUSTER", "SLOTS"))).handle((r, err) -> {
            if (err == null && r.get(0) instanceof List<?> ranges && !ranges.isEmpty()) {
                setMap(at, ranges);
                return CompletableFuture.<Void>completedFuture(null);
            }
            NodeFailure f = err == null ? null : Diagnosis.find(err, NodeFailure.class);
            said.add(at + ": " + (f != null ? f.reason() : err != null ? Diagnosis.describe(err, within)
                    : "CLUSTER SLOTS answered " + r.get(0)));
            return readMap(from, i + 1, within, said);
        }).thenCompose(f -> f);
    }

    /** The map from CLUSTER SLOTS' ranges: [start, end, [host, port, ...], replicas...]. */
    private synchronized void setMap(Url.HostPort from, List<?> ranges) {
        String[] map = new String[SlotHash.SLOT_COUNT];
        for (Object o : ranges) {
            if (o instanceof List<?> r && r.size() >= 3 && r.get(2) instanceof List<?> m && m.size() >= 2) {
                String host = String.valueOf(m.get(0));
                Url.HostPort at = new Url.HostPort(host.isEmpty() || host.equals("?") ? from.host() : host,
                        ((Long) m.get(1)).intValue());
                addresses.put(at.toString(), at);
                for (long s = (Long) r.get(0); s <= (Long) r.get(1); s++) {
                    map[(int) s] = at.toString();
                }
            }
        }
        slots = map;
    }

    private synchronized Url.HostPort masterOf(int slot) {
        return slots == null || slots[slot] == null ? null : addresses.get(slots[slot]);
    }

    private synchronized void moved(int slot, Url.HostPort to) {
        addresses.put(to.toString(), to);
        if (slots != null) {
            slots[slot] = to.toString();
        }
    }

    private synchronized void unmap() {
        slots = null;
    }

    /** The master at an address: a Server of its own, its server claimed for this node. */
    private synchronized Server server(Url.HostPort at) {
        addresses.putIfAbsent(at.toString(), at);
        return masters.computeIfAbsent(at.toString(), a -> Server.dial(name + " (master " + a + ")", at, tls, login,
                connect, identity == null ? null : identity.another()));
    }

    private static Url.HostPort hostPort(String text) {
        int colon = text.lastIndexOf(':');
        String host = text.substring(0, colon);
        if (host.startsWith("[")) {
            host = host.substring(1, host.length() - 1);
        }
        return new Url.HostPort(host, Integer.parseInt(text.substring(colon + 1)));
    }

    /** Closes every master's connections. */
    @Override
    public void close() {
        List<Server> all;
        synchronized (this) {
            closed = true;
            all = new ArrayList<>(masters.values());
            masters.clear();
        }
        all.forEach(Server::close);
    }
}
