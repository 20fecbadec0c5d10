package dev.dlock.transport;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.dlock.DlockException;
import dev.dlock.InvalidArgumentException;
import dev.dlock.LockContendedException;
import dev.dlock.LockManager;
import dev.dlock.NoQuorumException;
import dev.dlock.Options;
import dev.dlock.Resource;
import dev.dlock.WrongKindException;
import dev.dlock.testkit.Pki;
import dev.dlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * conformance/errors.json against real servers, every case through the manager: the error's
 * class, every word of its message (from the lock's own words to the node's), none of the absent
 * ones, and the time bound of a refusal waiting cannot cure.
 */
class ErrorsConformanceTest {
    @TestFactory
    Stream<DynamicTest> errors() {
        return Tables.cases("errors").stream().map(c -> DynamicTest.dynamicTest(c.get("situation").asText(),
                () -> assertTimeoutPreemptively(Duration.ofSeconds(30), () -> run(c))));
    }

    private static void run(JsonNode c) throws Exception {
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
            if (s != null) {
                c.path("config").propertyStream().forEach(e -> s.cli("CONFIG", "SET", e.getKey(), e.getValue().asText()));
            }
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
        long start = System.nanoTime();
        DlockException e = assertThrows(DlockException.class, () -> lock(c, given));
        String message = e.getMessage();
        Class<? extends DlockException> want = switch (c.get("error").asText()) {
            case "no_quorum" -> NoQuorumException.class;
            case "invalid_argument" -> InvalidArgumentException.class;
            case "contended" -> LockContendedException.class;
            case "wrong_kind" -> WrongKindException.class;
            default -> throw new AssertionError("unknown error class " + c.get("error"));
        };
        assertInstanceOf(want, e, message);
        for (JsonNode w : c.get("words")) {
            String word = w.asText().replace("{node}", given.get(0)).replace("{port}", "" + port);
            assertTrue(message.contains(word), "\"" + message + "\" lacks \"" + word + "\"");
        }
        for (JsonNode w : c.path("absent")) {
            assertFalse(message.contains(w.asText()), message);
        }
        if (c.has("within_ms")) {
            assertTrue(System.nanoTime() - start < c.get("within_ms").asLong() * 1_000_000, "took too long: " + message);
        }
    }

    /** The manager made as the case says, the lock asked for: what it throws. */
    private static void lock(JsonNode c, List<String> urls) {
        Options.Builder o = Options.builder().timeout(Duration.ofMillis(c.get("timeout_ms").asLong()));
        if (c.has("password")) {
            o.credentials("", c.get("password").asText());
        }
        String resource = c.has("resource") ? c.get("resource").asText() : "r";
        Duration ttl = Duration.ofMillis(c.has("ttl_ms") ? c.get("ttl_ms").asLong() : 10_000);
        try (LockManager m = LockManager.connect(urls, o.build())) {
            if (c.has("held")) {
                try (LockManager other = LockManager.connect(urls, o.build())) {
                    other.tryAcquire(kind(c.get("held"), resource), ttl); // held until its TTL
                }
            }
            Resource asked = kind(c.path("ask"), resource);
            if (c.get("wait_ms").isNull()) {
                m.tryAcquire(asked, ttl);
            } else {
                m.acquire(asked, ttl, Duration.ofMillis(c.get("wait_ms").asLong()));
            }
        }
    }

    private static Resource kind(JsonNode k, String resource) {
        return k.has("limit") ? Resource.semaphore(resource, k.get("limit").asInt()) : Resource.exclusive(resource);
    }
}
