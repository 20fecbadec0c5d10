package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.dlock.testkit.Quorum;
import dev.dlock.testkit.RedisProcess;
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
import org.junit.jupiter.api.Timeout;

/**
 * conformance/sets.json (go/sets_conformance_test.go): a set's checks before any I/O, the exact
 * command each operation sends, and the Cluster grouping; then every case through a manager on
 * three servers: a refused one sends nothing, an accepted one is held whole, in its modes, under
 * one token, and released.
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
      assertEquals(groups, Sets.groups(keys, dev.dlock.transport.Cluster::keySlot), "groups");
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
   * {@link Sets#groups} uses until then honest.
   */
  @TestFactory
  Stream<DynamicTest> theStandInSlotIsRedisClusters() {
    return Tables.each("slots.json", c -> assertEquals(c.get("slot").asInt(), dev.dlock.transport.Cluster.keySlot(c.get("key").asText())));
  }

  /** The case's set as the API takes it: its names with their modes, or every one exclusive. */
  static ResourceSet setOf(List<String> keys, List<Kind> modes) {
    if (modes == null) {
      return ResourceSet.exclusive(keys);
    }
    List<Resource> members = new ArrayList<>();
    for (int i = 0; i < keys.size(); i++) {
      String k = keys.get(i);
      Kind kind = modes.get(i);
      members.add(kind.equals(Kind.SHARED) ? Resource.shared(k)
          : kind.equals(Kind.EXCLUSIVE) ? Resource.exclusive(k) : Resource.semaphore(k, 1));
    }
    return ResourceSet.of(members);
  }

  @Test
  @Timeout(60)
  void everyCaseThroughTheManager() {
    try (Quorum q = Quorum.start(3);
        LockManager m = LockManager.connect(q.urls(), Options.builder().timeout(Duration.ofMillis(500)).build())) {
      for (JsonNode c : Tables.cases("sets.json")) {
        List<String> keys = Tables.strings(c.get("resources"));
        List<Kind> modes = modesOf(c.get("modes"));
        String label = Tables.label(c);
        if (!c.get("accepted").asBoolean()) {
          if (modes != null && modes.size() != keys.size()) {
            continue; // cannot be written: each Resource of a ResourceSet carries its own mode
          }
          assertThrows(InvalidArgumentException.class, () -> m.tryAcquireAll(setOf(keys, modes), Duration.ofSeconds(10)), label);
          if (modes == null) {
            assertThrows(InvalidArgumentException.class, () -> m.tryAcquireAll(keys, Duration.ofSeconds(10)), label);
            assertThrows(InvalidArgumentException.class, () -> m.getMultiLock(keys.toArray(new String[0])), label);
          }
          continue;
        }
        Lease set = m.tryAcquireAll(setOf(keys, modes), Duration.ofSeconds(10));
        List<Long> tokens = set.tokens();
        assertEquals(keys, set.resources(), label);
        assertTrue(tokens.stream().distinct().count() == 1 && tokens.get(0) > 0, label + ": " + tokens);
        for (int i = 0; i < keys.size(); i++) {
          boolean shared = modes != null && Kind.SHARED.equals(modes.get(i));
          for (RedisProcess s : q.servers()) {
            String st = s.cli("DLOCK.STATUS", keys.get(i));
            assertTrue(st.contains(set.owner()) && st.contains(Long.toUnsignedString(tokens.get(0))), label + " " + st);
            assertEquals(shared, st.startsWith("kind\nshared"), label + " " + keys.get(i) + ": " + st);
          }
        }
        set.release();
        for (String k : keys) {
          q.servers().forEach(s -> assertEquals("\n", s.cli("DLOCK.STATUS", k), label + ": " + k + " free"));
        }
      }
      long accepted = Tables.cases("sets.json").stream().filter(c -> c.get("accepted").asBoolean()).count();
      for (RedisProcess s : q.servers()) {
        String stats = s.cli("INFO", "commandstats");
        // One DLOCK.ACQUIREALL per accepted case: the refused ones sent nothing, none was an error.
        assertTrue(stats.contains("cmdstat_dlock.acquireall:calls=" + accepted + ","), stats);
        assertTrue(stats.contains("failed_calls=0") && !stats.matches("(?s).*dlock[^\\n]*rejected_calls=[1-9].*"), stats);
      }
    }
  }
}
