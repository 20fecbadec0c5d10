package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** conformance/leases.json through {@link Attempt#lease}. */
class LeasesConformanceTest {
  @TestFactory
  Stream<DynamicTest> leases() {
    return Tables.each("leases.json", c -> {
      JsonNode left = c.get("left_ms");
      Optional<Duration> validity = left == null || left.isNull()
          ? Optional.empty() : Optional.of(Duration.ofMillis(left.asLong()));
      Attempt.LeaseLeft got = Attempt.lease(c.get("nodes").asInt(), validity,
          Duration.ofMillis(c.get("ttl_ms").asLong()), c.get("renewed").asBoolean());
      assertEquals(c.get("lease").asText(), got.name().toLowerCase(Locale.ROOT));
    });
  }
}
