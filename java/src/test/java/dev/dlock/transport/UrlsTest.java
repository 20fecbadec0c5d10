package dev.dlock.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** conformance/urls.json and slots.json, every case. */
class UrlsTest {
    @TestFactory
    Stream<DynamicTest> urls() {
        return Tables.cases("urls").stream().map(c -> DynamicTest.dynamicTest("url \"" + c.get("url").asText() + "\"", () -> check(c)));
    }

    private static void check(JsonNode c) {
        String given = c.get("url").asText();
        if (!c.get("accepted").asBoolean()) {
            BadUrlException e = assertThrows(BadUrlException.class, () -> Url.parse(given));
            int at = given.indexOf('@');
            int colon = given.indexOf(':', given.indexOf("://") + 3);
            if (at > 0 && colon > 0 && colon < at) {
                assertFalse(e.getMessage().contains(given.substring(colon + 1, at)), e.getMessage());
            }
            return;
        }
        Url u = Url.parse(given);
        assertEquals(c.get("form").asText(), u.form().name().toLowerCase(Locale.ROOT));
        assertEquals(c.get("tls").asBoolean(), u.tls());
        if (c.has("ports")) {
            List<Integer> ports = new ArrayList<>();
            c.get("ports").forEach(p -> ports.add(p.asInt()));
            assertEquals(ports, u.ports());
        }
        if (c.has("name")) {
            assertEquals(c.get("name").asText(), u.name());
            assertEquals(c.get("name").asText(), u.toString());
        }
    }

    @TestFactory
    Stream<DynamicTest> slots() {
        return Tables.cases("slots").stream().map(c -> DynamicTest.dynamicTest("key \"" + c.get("key").asText() + "\"",
                () -> assertEquals(c.get("slot").asInt(), Cluster.keySlot(c.get("key").asText()))));
    }

    @Test
    void aRefusedUrlNamesItWithoutItsPassword() {
        BadUrlException e = assertThrows(BadUrlException.class, () -> Url.parse("redis://app:s3cret@h:6379?foo=bar"));
        assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
        assertEquals("node URL \"redis://app:***@h:6379?foo=bar\": query parameter \"foo\" is not supported "
                + "(only db, client_name; timeouts and TLS settings are options)", e.getMessage());
    }

    @Test
    void aConfigNeverShowsItsPasswords() {
        Config c = Config.of(java.time.Duration.ofSeconds(1)).withCredentials("u", "pw-1").withSentinelCredentials("s", "pw-2");
        assertFalse(c.toString().contains("pw-"), c.toString());
    }

    @Test
    void durationsAsTheClientsWriteThem() {
        assertEquals("500ms", Diagnosis.format(java.time.Duration.ofMillis(500)));
        assertEquals("2s", Diagnosis.format(java.time.Duration.ofSeconds(2)));
        assertEquals("1.5s", Diagnosis.format(java.time.Duration.ofMillis(1500)));
        assertEquals("1m0s", Diagnosis.format(java.time.Duration.ofMinutes(1)));
    }
}
