package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** conformance/validity.json through {@link Timing#validity}, to 0.001 ms. */
class ValidityConformanceTest {
  private static Duration ms(JsonNode v) {
    return Duration.ofNanos(Math.round(v.asDouble() * 1e6));
  }

  @TestFactory
  Stream<DynamicTest> validity() {
    return Tables.each("validity.json", c -> {
      Timing.Drift drift = new Timing.Drift(c.get("drift_factor").asDouble(), ms(c.get("drift_constant_ms")));
      Optional<Duration> left = Timing.validity(ms(c.get("ttl_ms")), ms(c.get("elapsed_ms")), drift);
      JsonNode want = c.get("validity_ms");
      if (want.isNull()) {
        assertTrue(left.isEmpty(), "nothing left, got " + left);
        return;
      }
      assertTrue(left.isPresent(), "some validity left");
      assertEquals(want.asDouble(), left.get().toNanos() / 1e6, 0.001);
    });
  }
}
