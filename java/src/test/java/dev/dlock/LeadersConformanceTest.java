package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.dlock.ElectionRule.View;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** conformance/leaders.json through {@link ElectionRule#leaderView}. */
class LeadersConformanceTest {
  /** A leaders.json leader ({id, value, epoch}) as the client's. */
  static Leader leaderOf(JsonNode l) {
    return new Leader(l.get("id").asText(), l.get("value").asText(), Tables.token(l.get("epoch")));
  }

  static View view(JsonNode n) {
    if (n.isNull()) {
      return View.noAnswer();
    }
    if (n.isTextual() && n.asText().equals("free")) {
      return View.free();
    }
    if (n.isObject()) {
      return View.held(n.get("owner").asText(), Tables.token(n.get("token")));
    }
    throw new AssertionError("unknown node view " + n);
  }

  @TestFactory
  Stream<DynamicTest> leaders() {
    return Tables.each("leaders.json", c -> {
      List<View> views = new ArrayList<>();
      c.get("nodes").forEach(n -> views.add(view(n)));
      Optional<Leader> previous = c.hasNonNull("previous") ? Optional.of(leaderOf(c.get("previous"))) : Optional.empty();
      ElectionRule.Verdict got = ElectionRule.leaderView(views, c.get("needed").asInt(), previous);
      JsonNode want = c.get("leader");
      if (want == null || want.isNull()) {
        assertFalse(got.known(), "unknown: too few answered, got " + got);
      } else if (want.isTextual() && want.asText().equals("none")) {
        assertTrue(got.known() && got.leader().isEmpty(), "nobody leads, got " + got);
      } else {
        assertTrue(got.known(), "known");
        assertEquals(Optional.of(leaderOf(want)), got.leader());
      }
    });
  }
}
