package dev.dlock;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Optional;

/**
 * Redlock's arithmetic, free of I/O (client/src/timing.rs, go/timing.go): quorum sizes, the
 * clock-drift allowance, validity, owners and tickets.
 */
public final class Timing {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final Object TICKETS = new Object();
  private static long lastTicket;

  private Timing() {}

  /**
   * The clock-drift allowance: {@code ttl * factor + constant}.
   *
   * @param factor the share of the TTL the nodes' clocks may disagree by (0.01: 1%)
   * @param constant added to it
   */
  public record Drift(double factor, Duration constant) {
    /** The drift every client assumes unless told otherwise: 1% + 2 ms. */
    public static final Drift DEFAULT = new Drift(0.01, Duration.ofMillis(2));

    /** Checks the constant is given. */
    public Drift {
      java.util.Objects.requireNonNull(constant, "constant");
    }
  }

  /** A majority of {@code nodes}: N/2 + 1. */
  static int majority(int nodes) {
    return nodes / 2 + 1;
  }

  /**
   * The nodes a permit of a semaphore of {@code limit} must be held on: the smallest q with q >
   * N*k/(k+1), so k+1 holders can never each gather a quorum (docs/shared.md).
   */
  static int semaphoreQuorum(int nodes, int limit) {
    long k = Math.max(limit, 1);
    // long: nodes * k may pass an int with a limit of 10000.
    return (int) (nodes * k / (k + 1) + 1);
  }

  /**
   * How long a hold is still safe to use after an operation that started {@code elapsed} ago:
   * {@code ttl - elapsed - (ttl * factor + constant)}, or empty when nothing is left.
   */
  public static Optional<Duration> validity(Duration ttl, Duration elapsed, Drift drift) {
    double nanos = validityNanos(ttl.toNanos(), Math.max(elapsed.toNanos(), 0), drift);
    // Under a nanosecond is float rounding, not time left.
    if (nanos < 1) {
      return Optional.empty();
    }
    return Optional.of(Duration.ofNanos((long) nanos));
  }

  private static double validityNanos(long ttl, long elapsed, Drift drift) {
    double factor = Math.max(drift.factor(), 0);
    return (double) (ttl - elapsed) - ((double) ttl * factor + (double) drift.constant().toNanos());
  }

  /** 128 random bits in hex: unique per acquisition, as the protocol requires. */
  static String newOwner() {
    byte[] b = new byte[16];
    RANDOM.nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  /**
   * Each round of an attempt asks under its own owner, so that a late RELEASE of an old round
   * cannot free the next.
   */
  static String roundOwner(String base, int round) {
    return base + ":" + round;
  }

  /**
   * The wall clock in microseconds, strictly increasing within this process: equal tickets
   * cannot wound each other. Across processes a tie costs only time, never safety.
   */
  static long drawTicket() {
    java.time.Instant now = java.time.Instant.now();
    long micros = now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    synchronized (TICKETS) {
      if (Long.compareUnsigned(micros, lastTicket) <= 0) {
        micros = lastTicket + 1;
      }
      lastTicket = micros;
      return micros;
    }
  }
}
