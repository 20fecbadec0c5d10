package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/** Every option's default (the other clients' own) and its check. */
class OptionsTest {
  @Test
  void theDefaultsAreTheOtherClients() {
    Options o = Options.defaults();
    assertEquals(Duration.ofMillis(50), o.timeout());
    assertEquals(Duration.ofMillis(100), o.ackTimeout());
    assertTrue(o.fencing());
    assertEquals(Options.WaitMode.QUEUE, o.waitMode());
    assertEquals(Options.ReplicaAck.AUTO, o.replicaAck());
    assertEquals(Optional.empty(), o.maxHold());
    assertEquals(Duration.ofMillis(3333), o.extendInterval(Duration.ofSeconds(10)));
    assertEquals(Duration.ofMillis(25), o.retryDelay());
    assertEquals(Duration.ofMillis(25), o.retryJitter());
    assertEquals(OptionalInt.empty(), o.retryCount());
    assertEquals(Timing.Drift.DEFAULT, o.drift());
  }

  @Test
  void eachBadValueIsRefusedAtOnce() {
    Options.Builder b = Options.builder();
    assertEquals("timeout must be at least 1 ms, got 0 ms",
        assertThrows(InvalidArgumentException.class, () -> b.timeout(Duration.ZERO)).getMessage());
    assertThrows(InvalidArgumentException.class, () -> b.retryCount(-1));
    assertThrows(InvalidArgumentException.class, () -> b.driftFactor(1));
    assertThrows(InvalidArgumentException.class, () -> b.driftFactor(Double.NaN));
    assertThrows(InvalidArgumentException.class, () -> b.retryDelay(Duration.ofMillis(-1)));
    assertThrows(InvalidArgumentException.class, () -> b.maxHold(Checks.MAX_WAIT.plusMillis(1)));
    assertThrows(InvalidArgumentException.class, () -> Options.ReplicaAck.replicas(-1));
    assertThrows(InvalidArgumentException.class, () -> b.tlsFiles(null, java.nio.file.Path.of("c.pem"), null));
  }

  @Test
  void aPasswordIsNeverShown() {
    Options o = Options.builder().fromEnv(Map.of("DLOCK_USER", "app", "DLOCK_PASSWORD", "s3cret-pa55")).build();
    assertEquals("s3cret-pa55", o.login().orElseThrow().password());
    assertFalse(o.toString().contains("s3cret-pa55"), o.toString());
    assertTrue(o.toString().contains("app"));
  }
}
