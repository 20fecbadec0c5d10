package dev.dlock;

import dev.dlock.transport.NodeFailure;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.dlock.Attempt.Action;
import dev.dlock.Replies.Policy;
import dev.dlock.Replies.Reply;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** conformance/attempts.json through {@link Attempt}, as go/conformance_test.go runs it. */
class AttemptsConformanceTest {
  static final Map<String, Policy> POLICIES = Map.of("queue", Policy.QUEUE, "no_wait", Policy.NO_WAIT,
      "no_wait_uncommitted", Policy.NO_WAIT_UNCOMMITTED);

  static Policy policy(JsonNode c) {
    Policy p = POLICIES.get(c.get("policy").asText());
    if (p == null) {
      throw new AssertionError("unknown policy " + c.get("policy"));
    }
    return p;
  }

  /** A node's answer to an ask as the transport hands it over. */
  static Reply answer(int node, JsonNode v) {
    String name = "node " + node;
    if (v.isTextual()) {
      return switch (v.asText()) {
        case "nil" -> Reply.nil();
        case "failed" -> Reply.failed(NodeFailure.of(name, "cannot connect"));
        case "no_reply" -> Reply.failed(NodeFailure.noReply(name, "timed out after 50 ms"));
        case "wrong_kind" -> Reply.failed(NodeFailure.of(name, "WRONGKIND held as a semaphore"));
        default -> throw new AssertionError("unknown answer " + v);
      };
    }
    if (v.has("error")) {
      // An error reply: Lettuce keeps the server's words, code included.
      return Reply.failed(NodeFailure.of(name, v.get("error").asText()));
    }
    return Reply.granted(Tables.token(v.get("grant")));
  }

  static Optional<NodeFailure> fenceAnswer(int node, String v) {
    return switch (v) {
      case "committed" -> Optional.empty();
      case "refused" -> Optional.of(NodeFailure.of("node " + node, "fence refused: lock no longer held"));
      case "failed" -> Optional.of(NodeFailure.of("node " + node, "cannot connect"));
      default -> throw new AssertionError("unknown fence answer " + v);
    };
  }

  static JsonNode errorShown(AttemptError e) {
    return switch (e.kind()) {
      case NO_QUORUM -> {
        ArrayNode nodes = Tables.JSON.createArrayNode();
        e.failures().forEach(f -> nodes.add(Integer.parseInt(f.node().substring("node ".length()))));
        ObjectNode o = Tables.JSON.createObjectNode();
        o.set("no_quorum", nodes);
        yield o;
      }
      case CONTENDED -> Tables.JSON.getNodeFactory().textNode("contended");
      case WRONG_KIND -> Tables.JSON.getNodeFactory().textNode("wrong_kind");
      case INVALID_ARGUMENT -> Tables.JSON.getNodeFactory().textNode("invalid");
      case VALIDITY_EXPIRED -> Tables.JSON.getNodeFactory().textNode("expired");
    };
  }

  /** Actions as the JSON has them. */
  static ArrayNode shown(List<Action> actions) {
    ArrayNode out = Tables.JSON.createArrayNode();
    for (Action a : actions) {
      ObjectNode o = out.addObject();
      switch (a.kind()) {
        case ASK -> o.putObject("ask").put("round", a.round()).set("nodes", Tables.array(a.nodes()));
        case ASK_AGAIN -> o.putObject("ask_again").put("node", a.node()).put("round", a.round())
            .put("after_pause", a.afterPause());
        case FENCE -> o.putObject("fence").put("round", a.round()).put("token", Long.toUnsignedString(a.token()))
            .set("nodes", Tables.array(a.nodes()));
        case RELEASE -> o.putObject("release").put("round", a.round()).set("nodes", Tables.array(a.nodes()));
        case HELD -> o.putObject("held").put("round", a.round()).put("token", Long.toUnsignedString(a.token()));
        case FAILED -> o.set("failed", errorShown(a.error().orElseThrow()));
      }
    }
    return out;
  }

  /** Gives the attempt one scripted input. */
  static List<Action> feed(Attempt a, JsonNode given) {
    if (given.isTextual() && given.asText().equals("deadline")) {
      return a.onDeadline();
    }
    if (given.size() != 1) {
      throw new AssertionError("one input at a time: " + given);
    }
    String what = given.fieldNames().next();
    JsonNode in = given.get(what);
    int node = in.get("node").asInt();
    int round = in.get("round").asInt();
    return switch (what) {
      case "reply" -> a.onReply(node, round, answer(node, in.get("answer")), Tables.flag(in, "past_deadline", false));
      case "fenced" -> a.onFenced(node, round, fenceAnswer(node, in.get("answer").asText()), Tables.flag(in, "valid", true));
      case "pause_over" -> a.onPauseOver(node, round);
      case "late" -> a.onLate(node, round, answer(node, in.get("answer")), Tables.flag(in, "released", false));
      default -> throw new AssertionError("unknown input " + what);
    };
  }

  @TestFactory
  Stream<DynamicTest> attempts() {
    return Tables.each("attempts.json", c -> {
      Attempt.Started s = Attempt.start(c.get("nodes").asInt(), c.get("needed").asInt(), policy(c));
      Tables.same(c.get("start"), shown(s.actions()), "start");
      int i = 0;
      for (JsonNode entry : c.get("script")) {
        Tables.same(Tables.listOrEmpty(entry, "do"), shown(feed(s.attempt(), entry.get("on"))),
            "input " + i++ + " " + entry.get("on"));
      }
    });
  }
}
