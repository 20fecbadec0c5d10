package dev.dlock.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.testkit.Pki;
import dev.dlock.testkit.RedisProcess;
import io.lettuce.core.KillArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** One server's calls against real servers: pipelines, waits, identity, ACL, TLS. */
class ServerTest {
    private static final Duration T = Duration.ofSeconds(2);
    private static RedisProcess server;
    private static Connect connect;

    @BeforeAll
    static void start() {
        server = RedisProcess.start(RedisProcess.Flavour.plain());
        connect = new Connect(Config.of(T));
    }

    @AfterAll
    static void stop() {
        connect.close();
        server.close();
    }

    private static Node node(String url, Registry r, int i) {
        return Node.open(Url.parse(url), connect, r == null ? null : new Identity(r, i));
    }

    @Test
    void aCallPipelinesSeveralCommandsEachReplyAValue() {
        try (Node n = node(server.url(), new Registry(List.of(server.url())), 0)) {
            List<Object> r = n.call(T, T, List.of(List.of("DLOCK.ACQUIRE", "pipe", "a", "10000"),
                    List.of("DLOCK.ACQUIRE", "pipe", "b", "10000"), List.of("DLOCK.NOSUCH"), List.of("PING"),
                    List.of("EVAL", "return {1, {'x', false}, redis.error_reply('BOOM inside')}", "0"))).join();
            assertInstanceOf(Long.class, r.get(0));
            assertNull(r.get(1)); // held by a
            assertTrue(((RedisError) r.get(2)).text().startsWith("ERR unknown command"), r.toString());
            assertEquals("PONG", r.get(3));
            assertEquals(List.of(1L, java.util.Arrays.asList("x", null), new RedisError("BOOM inside")), r.get(4));
        }
    }

    @Test
    void aWaitBlocksAConnectionOfItsOwn() {
        try (Node n = node(server.url(), null, 0)) {
            n.call(T, T, List.of(List.of("DLOCK.ACQUIRE", "waited", "a", "10000"))).join();
            long start = System.nanoTime();
            CompletableFuture<List<Object>> wait = n.callAlone(T, Duration.ofSeconds(5),
                    List.of(List.of("DLOCK.ACQUIRE", "waited", "b", "10000", "WAIT", "2000")));
            assertEquals(List.of("PONG"), n.call(T, T, List.of(List.of("PING"))).join());
            assertTrue(System.nanoTime() - start < 1_000_000_000L, "the shared connection was blocked");
            assertFalse(wait.isDone());
            assertEquals(java.util.Collections.singletonList(null), wait.join()); // nil at the wait's end
            assertTrue(System.nanoTime() - start >= 1_900_000_000L);
        }
    }

    @Test
    void aWaitOutOfTimeFailsAsNoReply() {
        try (Node n = node(server.url(), null, 0)) {
            n.call(T, T, List.of(List.of("DLOCK.ACQUIRE", "late", "a", "10000"))).join();
            CompletionException e = assertThrows(CompletionException.class, () -> n.callAlone(T, Duration.ofMillis(300),
                    List.of(List.of("DLOCK.ACQUIRE", "late", "b", "10000", "WAIT", "5000"))).join());
            NodeFailure f = assertInstanceOf(NodeFailure.class, e.getCause());
            assertTrue(f.noReply(), f.getMessage());
            assertEquals(server.url() + ": timed out after 300ms", f.getMessage());
        }
    }

    /** INFO field of the server, read on the probe's one connection (redis-cli would add one each). */
    private static long stat(StatefulRedisConnection<String, String> probe, String section, String field) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(field) + ":(\\d+)").matcher(probe.sync().info(section));
        assertTrue(m.find(), field);
        return Long.parseLong(m.group(1));
    }

    private static void eventually(String what, java.util.function.BooleanSupplier done) throws InterruptedException {
        long until = System.nanoTime() + 5_000_000_000L;
        while (!done.getAsBoolean()) {
            assertTrue(System.nanoTime() < until, what);
            Thread.sleep(5);
        }
    }

    /**
     * A wait answered in full leaves its connection for the next one; a timed-out wait's and a
     * cancelled wait's connections are closed, which withdraws them on the server; an idle
     * connection the server dropped is replaced within the call.
     */
    @Test
    void waitConnectionsAreKeptOnlyAfterAWholeReply() throws Exception {
        RedisClient pc = RedisClient.create(RedisURI.create("127.0.0.1", server.port));
        try (StatefulRedisConnection<String, String> probe = pc.connect(); Node n = node(server.url(), null, 0)) {
            n.call(T, T, List.of(List.of("DLOCK.ACQUIRE", "kept", "a", "10000"))).join();
            List<List<String>> wait = List.of(List.of("DLOCK.ACQUIRE", "kept", "b", "10000", "WAIT", "50"));
            n.callAlone(T, T, wait).join(); // nil after 50 ms: a whole reply
            long before = stat(probe, "stats", "total_connections_received");
            for (int i = 0; i < 5; i++) {
                n.callAlone(T, T, wait).join();
            }
            assertEquals(before, stat(probe, "stats", "total_connections_received"), "one connection serves each wait in turn");

            List<List<String>> longWait = List.of(List.of("DLOCK.ACQUIRE", "kept", "b", "10000", "WAIT", "5000"));
            assertThrows(CompletionException.class, () -> n.callAlone(T, Duration.ofMillis(200), longWait).join());
            eventually("the timed-out wait is withdrawn", () -> stat(probe, "clients", "blocked_clients") == 0);
            n.callAlone(T, T, wait).join();
            assertEquals(before + 1, stat(probe, "stats", "total_connections_received"), "the timed-out wait's connection was not reused");

            CompletableFuture<List<Object>> cancelled = n.callAlone(T, Duration.ofSeconds(10), longWait);
            eventually("the wait is blocked", () -> stat(probe, "clients", "blocked_clients") == 1);
            assertTrue(cancelled.cancel(true));
            eventually("the cancelled wait is withdrawn", () -> stat(probe, "clients", "blocked_clients") == 0);

            probe.sync().clientKill(KillArgs.Builder.typeNormal().skipme(true)); // the node's idle ones too
            assertEquals(java.util.Collections.singletonList(null), n.callAlone(T, T, wait).join());
        } finally {
            pc.shutdown();
        }
    }

    @Test
    void twoUrlsReachingOneServerAreRefusedNamingBoth() {
        String a = server.url();
        String b = "redis://localhost:" + server.port;
        Registry r = new Registry(List.of(a, b));
        try (Node first = node(a, r, 0); Node second = node(b, r, 1)) {
            first.call(T, T, List.of(List.of("PING"))).join();
            CompletionException e = assertThrows(CompletionException.class, () -> second.call(T, T, List.of(List.of("PING"))).join());
            String said = e.getCause().getMessage();
            assertTrue(said.startsWith(b + ": nodes " + a + " and " + b + " are the same server (run_id "), said);
            assertTrue(said.endsWith("): list each server once"), said);
            assertEquals(r.refusal(), r.refused(1));
            assertTrue(r.allMet());
        }
    }

    @Test
    void anAclLoginRightAndWrongThePasswordNeverSaid() {
        server.cli("ACL", "SETUSER", "locker", "on", ">pw-right-1", "+@all", "~*");
        String url = "redis://127.0.0.1:" + server.port;
        try (Connect right = new Connect(Config.of(T).withCredentials("locker", "pw-right-1"));
                Connect wrong = new Connect(Config.of(T).withCredentials("locker", "pw-wrong-2"));
                Node ok = Node.open(Url.parse(url), right, null);
                Node refused = Node.open(Url.parse(url), wrong, null)) {
            assertEquals(List.of("locker"), ok.call(T, T, List.of(List.of("ACL", "WHOAMI"))).join());
            CompletionException e = assertThrows(CompletionException.class, () -> refused.call(T, T, List.of(List.of("PING"))).join());
            NodeFailure f = assertInstanceOf(NodeFailure.class, e.getCause());
            assertEquals(url + ": " + Diagnosis.WRONG_PASS, f.getMessage());
            assertEquals(NodeFailure.Refused.SETUP, f.refused());
            assertFalse(f.toString().contains("pw-"), f.toString());
        }
    }

    @Test
    void tlsWithTheRightCaAndWithAnother() {
        Pki pki = Pki.make();
        Pki other = Pki.make();
        try (RedisProcess tls = RedisProcess.start(pki.flavour(true));
                Connect good = new Connect(Config.of(T).withTls(new Config.TlsFiles(pki.ca(), pki.clientCert(), pki.clientKey()).check()));
                Connect bad = new Connect(Config.of(T).withTls(new Config.TlsFiles(other.ca(), pki.clientCert(), pki.clientKey())));
                Node ok = Node.open(Url.parse(tls.url()), good, null);
                Node refused = Node.open(Url.parse(tls.url()), bad, null)) {
            assertEquals(List.of("PONG"), ok.call(T, T, List.of(List.of("PING"))).join());
            CompletionException e = assertThrows(CompletionException.class, () -> refused.call(T, T, List.of(List.of("PING"))).join());
            String said = e.getCause().getMessage();
            assertTrue(said.startsWith(tls.url() + ": TLS: "), said);
            assertTrue(said.contains("the server's certificate is not signed by a CA given"), said);
        } finally {
            pki.remove();
            other.remove();
        }
    }

    @Test
    void replicaAcknowledgementReadsTheWaitReply() {
        Ack ack = new Ack(1, Duration.ofMillis(100), true);
        try (Node n = node(server.url(), null, 0)) {
            List<Object> r = n.call(T, T, List.of(List.of("DLOCK.ACQUIRE", "acked", "a", "10000"), ack.await())).join();
            NodeFailure f = ack.check(n.name(), r).orElseThrow();
            assertEquals(server.url() + ": written but only 0 of 1 replicas acknowledged within 100ms", f.getMessage());
            assertTrue(ack.on(n.failoverManaged()));
            assertFalse(new Ack(1, Duration.ofMillis(100), false).on(n.failoverManaged()));
        }
    }
}
