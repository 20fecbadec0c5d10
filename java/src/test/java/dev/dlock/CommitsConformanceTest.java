package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * conformance/commits.json through {@link Commit}, as go/commit_conformance_test.go runs it:
 * whether a commit is owed, the one FENCE round to send, and the outcome after each reply.
 */
class CommitsConformanceTest {
  /** An outcome as the JSON has it: "pending", "lost" or {"committed": token}. */
  static JsonNode shown(Commit.Outcome outcome, long token) {
    return switch (outcome) {
      case PENDING -> Tables.JSON.getNodeFactory().textNode("pending");
      case LOST -> Tables.JSON.getNodeFactory().textNode("lost");
      case COMMITTED -> {
        ObjectNode o = Tables.JSON.createObjectNode();
        yield o.put("committed", Long.toUnsignedString(token));
      }
    };
  }

  @TestFactory
  Stream<DynamicTest> commits() {
    return Tables.each("commits.json", c -> {
      int nodes = c.get("nodes").asInt();
      long token = Tables.token(c.get("token"));
      boolean owed = Commit.owed(c.get("policy").asText().equals("no_wait"), nodes, c.get("fencing").asBoolean());
      assertEquals(c.get("owed").asBoolean(), owed, "owed");
      JsonNode start = c.get("start");
      boolean valid = Tables.flag(c, "valid", true);
      if (!owed || !valid) {
        // Nothing sent: committed before (or nothing to commit), or lost with no validity left.
        Tables.same(start.get("outcome"), shown(valid ? Commit.Outcome.COMMITTED : Commit.Outcome.LOST, token), "outcome");
        assertFalse(start.has("fence"), "a FENCE where nothing is sent");
        assertEquals(0, c.get("script").size(), "replies where nothing is sent");
        return;
      }
      Commit.Started s = Commit.start(nodes, c.get("needed").asInt(), token, Tables.ints(c.get("holding")));
      JsonNode fence = start.get("fence");
      assertEquals(Tables.ints(fence.get("nodes")), s.asked(), "FENCE sent to");
      assertEquals(Tables.token(fence.get("token")), s.commit().token(), "FENCE of");
      Tables.same(start.get("outcome"), shown(s.commit().outcome(), s.commit().token()), "start");
      int i = 0;
      for (JsonNode step : c.get("script")) {
        JsonNode fenced = step.get("fenced");
        Commit.Outcome got = s.commit().onFenced(fenced.get("node").asInt(), fenced.get("answer").asText().equals("committed"));
        Tables.same(step.get("outcome"), shown(got, s.commit().token()), "step " + i++ + " " + fenced);
      }
    });
  }
}
