package dev.dlock.transport;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Function;

/**
 * Which redis-server a connection reached, so that one server never counts twice in a quorum
 * (Go's transport/identity.go). A URL's text does not say which server it reaches: localhost
 * and 127.0.0.1, a sentinel group's master and the same master given directly, two seeds of one
 * Redis Cluster all name one process; counted as two nodes, that one process made a quorum
 * alone (issue 48). So every new connection, before its first request, reads the server's
 * run_id (DLOCK.RUNID, or INFO server from a module older than that command) and claims it for
 * its quorum node in the manager's {@link Registry}. A server another node already claimed is
 * refused: the connection is closed and the node's calls fail.
 *
 * <p>An Identity is one place in the registry (a plain node's server, a cluster master's
 * address, a sentinel group's master whichever server it is): the run_id its connections last
 * showed. A null Identity checks nothing (the callers test for it).
 */
public final class Identity {
    private final Registry registry;
    private final int node;
    private String seen = "";

    /**
     * Node's identity in registry.
     *
     * @param registry the manager's registry
     * @param node the node's index in it
     */
    public Identity(Registry registry, int node) {
        this.registry = registry;
        this.node = node;
    }

    /** @return the same node's identity for another of its servers (a cluster's other masters) */
    public Identity another() {
        return new Identity(registry, node);
    }

    /** A connection refused as one that must not count, said as it is (Go's Refusal). */
    static class Refusal extends Exception {
        private static final long serialVersionUID = 1L;

        Refusal(String why) {
            super(why);
        }
    }

    /** A refusal of a connection's setup that connecting again cannot cure (Go's Final). */
    static final class Final extends Refusal {
        private static final long serialVersionUID = 1L;

        Final(String why) {
            super(why);
        }
    }

    /**
     * Reads the server's run_id with ask (one request on the connection being set up: its reply,
     * a {@link RedisError} for an error reply; a failed future when the connection failed) and
     * claims it. The future fails with a {@link Refusal} (or the login's error reply) to refuse
     * the connection with.
     */
    CompletableFuture<Void> identify(Function<List<String>, CompletableFuture<Object>> ask) {
        return ask.apply(List.of("DLOCK.RUNID")).thenCompose(id -> {
            if (id instanceof RedisError e && unknownCommand(e.text())) {
                // A module older than DLOCK.RUNID: INFO server shows the same run_id.
                return ask.apply(List.of("INFO", "server")).thenApply(info -> {
                    if (info instanceof RedisError r) {
                        throw new CompletionException(refused(r, Identity::infoRefused));
                    }
                    check(runId(String.valueOf(info)));
                    return null;
                });
            }
            if (id instanceof RedisError e) {
                throw new CompletionException(refused(e, Identity::runIdRefused));
            }
            check(String.valueOf(id));
            return CompletableFuture.completedFuture(null);
        });
    }

    /**
     * The server answered the error reply said instead of its run_id: a login refused is said
     * as any first request says it; anything else is what to allow.
     */
    private Exception refused(RedisError said, Function<String, String> say) {
        registry.met(node);
        if (Diagnosis.refusedLogin(said.text()) != null) {
            return new ReplyException(said);
        }
        if (said.text().startsWith("NOPERM")) {
            return new Final(say.apply(said.text())); // connecting again cannot cure it
        }
        return new Refusal(say.apply(said.text()));
    }

    /** Claims the server whose run_id is id ("": its INFO server had none). */
    private void check(String id) {
        registry.met(node);
        if (id.isEmpty()) {
            throw new CompletionException(new Refusal("cannot tell which server this is: INFO server has no run_id"));
        }
        synchronized (this) {
            if (id.equals(seen)) {
                return;
            }
            String why = registry.claim(node, id, seen);
            if (!why.isEmpty()) {
                throw new CompletionException(new Refusal(why));
            }
            seen = id;
        }
    }

    /**
     * @param info an INFO server reply
     * @return its run_id field ("" when it has none)
     */
    public static String runId(String info) {
        for (String line : info.split("\n")) {
            String l = line.stripTrailing();
            if (l.startsWith("run_id:")) {
                return l.substring("run_id:".length()).strip();
            }
        }
        return "";
    }

    /**
     * @param said an error reply, code first
     * @return the server does not know the command (a module older than DLOCK.RUNID, or none)
     */
    public static boolean unknownCommand(String said) {
        String s = said.startsWith("ERR ") ? said.substring(4) : said;
        return s.toLowerCase(java.util.Locale.ROOT).startsWith("unknown command");
    }

    static String runIdRefused(String said) {
        return "cannot tell which server this is (DLOCK.RUNID refused: " + said + "): allow the user DLOCK.RUNID "
                + "(+dlock.runid; +@dlock has it on Redis 7.2+), which dlock reads the server's run_id with";
    }

    static String infoRefused(String said) {
        return "cannot tell which server this is (INFO server refused: " + said
                + "): allow the user INFO (+info), which dlock reads the server's run_id with";
    }

    /** An error reply met while a connection is set up, carried as an exception. */
    static final class ReplyException extends Exception {
        private static final long serialVersionUID = 1L;
        private final transient RedisError reply;

        ReplyException(RedisError reply) {
            super(reply.text());
            this.reply = reply;
        }

        RedisError reply() {
            return reply;
        }
    }
}
