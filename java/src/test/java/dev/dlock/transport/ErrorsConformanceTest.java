package dev.dlock.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.dlock.testkit.Pki;
import dev.dlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * conformance/errors.json against real servers, every case: those about reaching and
 * diagnosing nodes run on the transport now (the node's failure must carry the words from
 * "{node}:" on); those that need a lock acquired or the manager's checks abort with what they
 * await. The engine's step removes the abort and runs them through the manager.
 */
class ErrorsConformanceTest {
    /** The cases that need the manager: what each awaits. */
    private static final Map<String, String> AWAITING = Map.ofEntries(
            Map.entry("one URL given twice", "the manager's check of URLs given twice (manager)"),
            Map.entry("an empty resource name", "the engine's checks (options)"),
            Map.entry("an empty resource name, waiting", "the engine's checks (options)"),
            Map.entry("a wait beyond what the nodes take", "the engine's checks (options)"),
            Map.entry("a TTL the clock drift allowance leaves nothing of", "the engine's checks (timing, options)"),
            Map.entry("a TTL the clock drift allowance leaves nothing of, waiting", "the engine's checks (timing, options)"),
            Map.entry("a TTL over the node's dlock.max-ttl-ms, waiting", "the lock call (driver, calls: a node's refused argument)"),
            Map.entry("held, one attempt", "the lock call (driver, calls, manager)"),
            Map.entry("held, waited for", "the lock call (driver, calls, manager)"),
            Map.entry("held as another kind", "the lock call (driver, calls, manager)"),
            Map.entry("held as another kind, waiting", "the lock call (driver, calls, manager)"));

    @TestFactory
    Stream<DynamicTest> errors() {
        return Tables.cases("errors").stream().map(c -> DynamicTest.dynamicTest(c.get("situation").asText(), () -> run(c)));
    }

    private static void run(JsonNode c) throws Exception {
        String situation = c.get("situation").asText();
        if (AWAITING.containsKey(situation)) {
            Assumptions.abort("awaits the engine: " + AWAITING.get(situation) + " — the next step runs it through the manager");
        }
        String server = c.get("server").asText();
        Pki pki = server.equals("tls") ? Pki.make() : null;
        RedisProcess s = switch (server) {
            case "module" -> RedisProcess.start(RedisProcess.Flavour.plain());
            case "password" -> RedisProcess.start(new RedisProcess.Flavour(false, List.of("--requirepass", "right-password"),
                    List.of("--no-auth-warning", "-a", "right-password"), true));
            case "tls" -> RedisProcess.start(pki.flavour(false));
            default -> null;
        };
        int port = s != null ? s.port : RedisProcess.freePort();
        try {
            check(c, port);
        } finally {
            if (s != null) {
                s.close();
            }
            if (pki != null) {
                pki.remove();
            }
        }
    }

    private static void check(JsonNode c, int port) {
        List<String> given = new ArrayList<>();
        if (c.get("url").isArray()) {
            c.get("url").forEach(u -> given.add(u.asText().replace("{port}", "" + port)));
        } else {
            given.add(c.get("url").asText().replace("{port}", "" + port));
        }
        String message;
        if (c.get("error").asText().equals("invalid_argument") && given.size() == 1
                && !c.path("url").asText().startsWith("redis://")) {
            message = assertThrows(BadUrlException.class, () -> Url.parse(given.get(0))).getMessage();
        } else {
            message = reach(c, given);
        }
        String node = given.get(0);
        for (JsonNode w : c.get("words")) {
            String word = w.asText().replace("{node}", node).replace("{port}", "" + port);
            int at = w.asText().indexOf("{node}:");
            String ours = at > 0 ? word.substring(w.asText().substring(0, at).length()) : word; // the engine says the rest
            assertTrue(message.contains(ours), "\"" + message + "\" lacks \"" + ours + "\"");
        }
        for (JsonNode w : c.path("absent")) {
            assertFalse(message.contains(w.asText()), message);
        }
    }

    /** Calls every node as a lock call would (a wait on a connection of its own): the failure's message. */
    private static String reach(JsonNode c, List<String> given) {
        Config conf = Config.of(Duration.ofMillis(c.get("timeout_ms").asLong()));
        if (c.has("password")) {
            conf = conf.withCredentials("", c.get("password").asText());
        }
        boolean waiting = !c.get("wait_ms").isNull();
        List<Url> urls = given.stream().map(Url::parse).toList();
        Registry registry = new Registry(urls.stream().map(Url::name).toList());
        long start = System.nanoTime();
        try (Connect connect = new Connect(conf)) {
            NodeFailure f = null;
            for (int i = 0; i < urls.size(); i++) {
                try (Node n = Node.open(urls.get(i), connect, new Identity(registry, i))) {
                    List<List<String>> cmds = List.of(List.of("PING"));
                    var call = waiting ? n.callAlone(conf.timeout(), conf.timeout(), cmds) : n.call(conf.timeout(), conf.timeout(), cmds);
                    if (i + 1 < urls.size()) {
                        call.handle((r, e) -> r).join(); // an earlier node claims its server, or fails: the last one is judged
                        continue;
                    }
                    CompletionException e = assertThrows(CompletionException.class, call::join);
                    f = assertInstanceOf(NodeFailure.class, e.getCause());
                }
            }
            String error = c.get("error").asText();
            if (error.equals("invalid_argument") && urls.size() == 1) {
                assertEquals(NodeFailure.Refused.DATABASE, f.refused(), f.getMessage());
            }
            if (c.has("within_ms") && error.equals("no_quorum")) {
                assertEquals(NodeFailure.Refused.SETUP, f.refused(), f.getMessage());
            }
            if (urls.size() > 1) {
                assertEquals(f.reason(), registry.refused(urls.size() - 1));
            }
            if (c.has("within_ms")) {
                assertTrue(System.nanoTime() - start < c.get("within_ms").asLong() * 1_000_000, "took too long");
            }
            return f.getMessage();
        }
    }
}
