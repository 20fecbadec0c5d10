package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.dlock.Acquisition.Event;
import dev.dlock.Acquisition.Step;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** conformance/acquisition.json through the machine {@link Acquisition}. */
class AcquisitionConformanceTest {
  /** Steps as the JSON has them. */
  static ArrayNode shown(List<Step> steps) {
    ArrayNode out = Tables.JSON.createArrayNode();
    for (Step s : steps) {
      ObjectNode o = out.addObject().put("step", s.kind().name().toLowerCase(Locale.ROOT));
      switch (s.kind()) {
        case WAIT, RELEASE -> o.put("round", s.round()).set("nodes", Tables.array(s.nodes()));
        case FENCE -> o.put("round", s.round()).put("token", Long.toUnsignedString(s.token()))
            .set("nodes", Tables.array(s.nodes()));
        case HELD -> o.put("token", Long.toUnsignedString(s.token()));
        case FAILED -> { }
      }
    }
    return out;
  }

  static Event event(JsonNode e) {
    int node = e.get("node").asInt();
    int round = e.get("round").asInt();
    return switch (e.get("event").asText()) {
      case "granted" -> Event.granted(node, round, Tables.token(e.get("token")));
      case "unavailable" -> Event.unavailable(node, round);
      case "fenced" -> Event.fenced(node, round, e.get("committed").asBoolean());
      default -> throw new AssertionError("unknown event " + e);
    };
  }

  @TestFactory
  Stream<DynamicTest> acquisition() {
    return Tables.each("acquisition.json", c -> {
      int nodes = c.get("nodes").asInt();
      int needed = c.get("needed").asInt();
      Acquisition.Started s = Tables.flag(c, "once", false)
          ? Acquisition.startOnce(nodes, needed, Tables.flag(c, "commit", true))
          : Acquisition.startAcquisition(nodes, needed);
      Acquisition a = s.machine();
      Tables.same(c.get("start"), shown(s.steps()), "start");
      int i = 0;
      for (JsonNode entry : c.get("script")) {
        Tables.same(Tables.listOrEmpty(entry, "steps"), shown(a.on(event(entry.get("on")))),
            "event " + i++ + " " + entry.get("on"));
      }
      JsonNode held = c.get("held");
      if (held == null || held.isNull()) {
        assertEquals(false, a.isHeld(), "not held");
      } else {
        assertEquals(true, a.isHeld(), "held");
        assertEquals(Tables.token(held), a.token(), "held with the token");
      }
      assertEquals(c.get("round").asInt(), a.round(), "round");
    });
  }
}
