package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.OptionalInt;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** conformance/retries.json through {@link Attempt#anotherAttempt}. */
class RetriesConformanceTest {
  static final Map<String, AttemptError.Kind> KINDS = Map.of("contended", AttemptError.Kind.CONTENDED,
      "no_quorum", AttemptError.Kind.NO_QUORUM, "wrong_kind", AttemptError.Kind.WRONG_KIND,
      "expired", AttemptError.Kind.VALIDITY_EXPIRED, "invalid", AttemptError.Kind.INVALID_ARGUMENT);

  @TestFactory
  Stream<DynamicTest> retries() {
    return Tables.each("retries.json", c -> {
      AttemptError.Kind kind = KINDS.get(c.get("error").asText());
      if (kind == null) {
        throw new AssertionError("unknown error " + c.get("error"));
      }
      JsonNode count = c.get("retry_count");
      OptionalInt retries = count == null || count.isNull() ? OptionalInt.empty() : OptionalInt.of(count.asInt());
      boolean again = Attempt.anotherAttempt(AttemptsConformanceTest.policy(c), AttemptError.of(kind),
          c.get("out_of_time").asBoolean(), c.get("attempts").asInt(), retries);
      assertEquals(c.get("again").asBoolean(), again);
    });
  }
}
