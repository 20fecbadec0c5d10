package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * conformance/sets.json, its pure part (go/sets_conformance_test.go without the manager): a set's
 * checks before any I/O, the exact command each operation sends, and the Cluster grouping.
 */
class SetsConformanceTest {
  /** The table's letters as kinds: x exclusive, s shared, any other a kind a set cannot hold. */
  static List<Kind> modesOf(JsonNode v) {
    if (v == null || v.isNull()) {
      return null;
    }
    List<Kind> kinds = new ArrayList<>();
    for (String letter : Tables.strings(v)) {
      kinds.add(switch (letter) {
        case "x" -> Kind.EXCLUSIVE;
        case "s" -> Kind.SHARED;
        default -> Kind.semaphore(1);
      });
    }
    return kinds;
  }

  @TestFactory
  Stream<DynamicTest> sets() {
    return Tables.each("sets.json", c -> {
      List<String> keys = Tables.strings(c.get("resources"));
      String owner = c.get("owner").asText();
      Duration ttl = Duration.ofMillis(c.get("ttl_ms").asLong());
      if (!c.get("accepted").asBoolean()) {
        assertEquals("invalid_argument", c.get("refused").asText());
        assertThrows(InvalidArgumentException.class, () -> Sets.members(keys, modesOf(c.get("modes"))));
        return;
      }
      Sets.Members set = Sets.members(keys, modesOf(c.get("modes")));
      Map<String, List<String>> got = Map.of(
          "acquire", Commands.acquireAll(set, owner, ttl, Optional.empty()),
          "acquire_wait", Commands.acquireAll(set, owner, ttl, Optional.of(new Commands.Queued(Duration.ofSeconds(5), 7))),
          "release", Commands.releaseAll(set, owner),
          "extend", Commands.extendAll(set, owner, ttl),
          "fence", Commands.fenceAll(set, owner, 42, ttl));
      JsonNode commands = c.get("commands");
      assertEquals(got.size(), commands.size(), "the table's commands and the test's");
      for (Iterator<String> ops = commands.fieldNames(); ops.hasNext(); ) {
        String op = ops.next();
        assertEquals(Tables.strings(commands.get(op)), got.get(op), op);
      }
      List<List<String>> groups = new ArrayList<>();
      c.get("groups").forEach(g -> groups.add(Tables.strings(g)));
      assertEquals(groups, Sets.groups(keys), "groups");
    });
  }

  @Test
  void theGroupsOfASetKeepTheirModes() {
    Sets.Members set = Sets.members(List.of("b", "a", "c"), List.of(Kind.EXCLUSIVE, Kind.SHARED, Kind.EXCLUSIVE));
    assertEquals("sx", set.subset(List.of("a", "b")).modes());
    assertEquals("", set.subset(List.of("c", "b")).modes(), "both exclusive");
  }

  /**
   * conformance/slots.json is the transport's table (its KeySlot); it keeps the stand-in slot
   * {@link Sets#groups(List)} uses until then honest.
   */
  @TestFactory
  Stream<DynamicTest> theStandInSlotIsRedisClusters() {
    return Tables.each("slots.json", c -> assertEquals(c.get("slot").asInt(), dev.dlock.transport.Cluster.keySlot(c.get("key").asText())));
  }
}
