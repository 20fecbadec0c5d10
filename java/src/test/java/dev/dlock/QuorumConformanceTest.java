package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** conformance/quorum.json through {@link Kind#quorum}. */
class QuorumConformanceTest {
  @TestFactory
  Stream<DynamicTest> quorum() {
    return Tables.each("quorum.json", c -> {
      Kind kind = switch (c.get("kind").asText()) {
        case "exclusive" -> Kind.EXCLUSIVE;
        case "shared" -> Kind.SHARED;
        case "semaphore" -> Kind.semaphore(c.get("limit").asInt());
        default -> throw new AssertionError("unknown kind " + c.get("kind"));
      };
      assertEquals(c.get("quorum").asInt(), kind.quorum(c.get("nodes").asInt()));
    });
  }
}
