package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** conformance/replies.json through {@link Replies#classify}. */
class RepliesConformanceTest {
  @TestFactory
  Stream<DynamicTest> replies() {
    return Tables.each("replies.json", c -> {
      Replies.Outcome out = Replies.classify(AttemptsConformanceTest.answer(0, c.get("answer")),
          AttemptsConformanceTest.policy(c), c.get("past_deadline").asBoolean());
      assertEquals(c.get("counts_as").asText(), out.counts().name().toLowerCase(Locale.ROOT));
    });
  }
}
