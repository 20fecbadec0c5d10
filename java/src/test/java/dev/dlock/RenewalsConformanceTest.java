package dev.dlock;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** conformance/renewals.json through {@link Renewal#next}. */
class RenewalsConformanceTest {
  private static Duration ms(JsonNode v) {
    return Duration.ofMillis(v.asLong());
  }

  @TestFactory
  Stream<DynamicTest> renewals() {
    return Tables.each("renewals.json", c -> {
      Renewal.Extension last = Renewal.Extension.valueOf(c.get("last").asText().toUpperCase(Locale.ROOT));
      Optional<Duration> pause = Renewal.next(ms(c.get("ttl_ms")), ms(c.get("interval_ms")), ms(c.get("left_ms")), last);
      JsonNode got = pause.isEmpty()
          ? Tables.JSON.getNodeFactory().textNode("lost")
          : Tables.JSON.createObjectNode().put("extend_in_ms", pause.get().toMillis());
      Tables.same(c.get("next"), got, "next");
    });
  }
}
