package dev.dlock;

import java.math.BigInteger;
import java.time.Duration;
import java.util.Optional;

/**
 * The arguments refused before any node is asked, in the words every client uses
 * (client/src/checks.rs; Go's in manager.go; conformance/errors.json): what a node would refuse
 * anyway, and what could never work. A node that refuses one all the same (its
 * {@code dlock.max-ttl-ms} set lower, say) ends the attempt too ({@link Replies#classify}).
 */
public final class Checks {
  /** The longest TTL the nodes take by default ({@code dlock.max-ttl-ms}): a day. */
  public static final Duration MAX_TTL = Duration.ofDays(1);

  /**
   * The longest duration the nodes take in any argument (WAIT's included): ten years, the
   * module's LIMIT_MS. A longer wait is refused before it is sent, where every node would refuse
   * it on every attempt.
   */
  public static final Duration MAX_WAIT = Duration.ofMillis(315_360_000_000L);

  /** The longest owner name a node takes (the module's MAX_OWNER_LEN). */
  public static final int MAX_OWNER_LEN = 256;

  private Checks() {}

  /**
   * A duration as messages show it: whole milliseconds, "50 ms" (finer only when it has to be).
   * Any {@link Duration} shows, {@code ChronoUnit.FOREVER}'s included: its milliseconds are
   * counted without {@code toNanos}/{@code toMillis}, which overflow past ~292 years, so a check
   * refusing a huge duration can always say what it got.
   */
  static String show(Duration d) {
    if (d.abs().compareTo(Duration.ofDays(365)) > 0) {
      return BigInteger.valueOf(d.getSeconds()).multiply(BigInteger.valueOf(1000))
          .add(BigInteger.valueOf(d.getNano() / 1_000_000)) + " ms";
    }
    if (d.toNanos() % 1_000_000 == 0) {
      return d.toMillis() + " ms";
    }
    return d.toNanos() / 1e6 + " ms";
  }

  /**
   * A resource's name: any characters but none at all (an empty key names nothing meant), and
   * valid UTF-16 ({@link #checkText}).
   */
  static void checkName(String name) {
    if (name == null || name.isEmpty()) {
      throw new InvalidArgumentException("the resource name must not be empty");
    }
    checkText("the resource name", name);
  }

  /**
   * Text sent to the nodes must be valid UTF-16: an unpaired surrogate has no UTF-8 encoding, and
   * Java's encoder would send '?' in its place, so "a\uD800" and "a\uDC00" would name one key.
   */
  static void checkText(String what, String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        throw new InvalidArgumentException(what + " must be valid UTF-16: an unpaired surrogate (U+"
            + Integer.toHexString(c).toUpperCase(java.util.Locale.ROOT) + ") at index " + i + " has no UTF-8 encoding");
      }
    }
  }

  /** An owner named by the caller: 1 to {@link #MAX_OWNER_LEN} bytes, as the nodes take. */
  static void checkOwner(String owner) {
    if (owner != null) {
      checkText("owner", owner);
    }
    int bytes = owner == null ? 0 : owner.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
    if (bytes == 0 || bytes > MAX_OWNER_LEN) {
      throw new InvalidArgumentException(
          "owner must be 1 to " + MAX_OWNER_LEN + " bytes, got " + bytes + " bytes");
    }
  }

  /** The words of a duration over {@link #MAX_WAIT}. */
  static String tooLong(String name, Duration d) {
    return name + " must be at most 315360000000 ms (ten years, the longest the nodes take), got " + show(d);
  }

  /** How long a call may wait for a lock: 0 to {@link #MAX_WAIT}. */
  static void checkWait(Duration wait) {
    if (wait == null || wait.isNegative()) {
      throw new InvalidArgumentException("wait must be 0 or more, got " + (wait == null ? "none" : show(wait)));
    }
    if (wait.compareTo(MAX_WAIT) > 0) {
      throw new InvalidArgumentException(tooLong("wait", wait));
    }
  }

  /** A TTL the nodes take by default: 1 ms to a day. */
  static void checkTtl(Duration ttl) {
    if (ttl == null || ttl.compareTo(Duration.ofMillis(1)) < 0 || ttl.compareTo(MAX_TTL) > 0) {
      throw new InvalidArgumentException("ttl must be from 1 ms to 1 day (86400000 ms, the nodes' default "
          + "dlock.max-ttl-ms), got " + (ttl == null ? "none" : show(ttl)));
    }
  }

  /**
   * {@link #checkTtl}, and a TTL that leaves some validity after the clock drift allowance
   * (validity is {@code ttl - elapsed - drift}: a shorter one is never valid, and asking for it
   * would only retry until the wait ran out). The message names the shortest.
   */
  static void checkLease(Duration ttl, Timing.Drift drift) {
    checkTtl(ttl);
    Duration whole = Duration.ofMillis(ttl.toMillis());
    if (Timing.validity(whole, Duration.ZERO, drift).isPresent()) {
      return;
    }
    String allowance = "the clock drift allowance (" + number(drift.factor() * 100) + "% of the TTL + "
        + number(drift.constant().toNanos() / 1e6) + " ms)";
    Optional<Duration> shortest = shortestTtl(drift);
    if (shortest.isEmpty()) {
      throw new InvalidArgumentException("no ttl leaves any validity after " + allowance + ": lower the drift allowance");
    }
    throw new InvalidArgumentException("ttl must be at least " + shortest.get().toMillis()
        + " ms: a shorter one leaves no validity after " + allowance + ", got " + whole.toMillis() + " ms");
  }

  // A number as Go's %g shows it: 1 not 1.0.
  private static String number(double v) {
    return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
  }

  /** The shortest whole-millisecond TTL with some validity after drift; empty: none. */
  static Optional<Duration> shortestTtl(Timing.Drift drift) {
    if (drift.factor() >= 1) {
      return Optional.empty();
    }
    // ttl * (1 - factor) > constant; the loop settles what floating point leaves in doubt.
    long ms = Math.max((long) (drift.constant().toNanos() / 1e6 / (1 - drift.factor())) - 1, 1);
    for (long t = ms; t <= MAX_TTL.toMillis(); t++) {
      if (Timing.validity(Duration.ofMillis(t), Duration.ZERO, drift).isPresent()) {
        return Optional.of(Duration.ofMillis(t));
      }
    }
    return Optional.empty();
  }
}
