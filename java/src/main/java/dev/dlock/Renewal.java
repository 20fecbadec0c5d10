package dev.dlock;

import java.time.Duration;
import java.util.Optional;

/**
 * When a held lock's watchdog extends it, and when it declares the lock lost
 * (client/src/renewal.rs, go/renewal.go; conformance/renewals.json): the one lease-loss contract
 * every client keeps (docs/election.md).
 *
 * <p>A watched lock is lost at its renew deadline, {@link #renewMargin} before its validity ends,
 * unless an extension confirmed by a quorum came first: never after the lease may already have
 * ended on the nodes, so the holder has the margin to stop before anyone else can be granted. An
 * extension the nodes refused (a quorum is out of reach: they say it is not held) is a loss at
 * once; one that could not be confirmed (nodes unreachable, too slow) is tried again, at shorter
 * and shorter pauses, until the renew deadline. Without a watchdog there is no renew deadline: the
 * lock ends with its validity ({@link #endIn}).
 */
final class Renewal {
  private Renewal() {}

  /** How the last extension went (the grant itself counts as extended). */
  enum Extension {
    EXTENDED,
    /** Enough nodes said "not held" that no quorum can extend it any more. */
    REFUSED,
    /** Too few nodes answered, or too late to count. */
    UNCONFIRMED
  }

  /**
   * How long before its validity ends a lock without a confirmed extension is declared lost: a
   * tenth of the TTL, at least 1 ms (whole milliseconds, as every client counts it).
   */
  static Duration renewMargin(Duration ttl) {
    return Duration.ofMillis(Math.max(ttl.toMillis() / 10, 1));
  }

  /**
   * The watchdog's next step with {@code left} of validity, its {@code interval}, after
   * {@code last}: the pause before the next extension, or empty: lost.
   */
  static Optional<Duration> next(Duration ttl, Duration interval, Duration left, Extension last) {
    long margin = renewMargin(ttl).toMillis();
    long leftMs = left.toMillis();
    if (last == Extension.REFUSED || leftMs <= margin) {
      return Optional.empty();
    }
    long wait = interval.toMillis();
    if (last == Extension.UNCONFIRMED) {
      wait /= 2;
    }
    // Halfway to the renew deadline at the latest: the extension has time to be confirmed.
    wait = Math.min(wait, (leftMs - margin) / 2);
    return Optional.of(Duration.ofMillis(Math.max(wait, 1)));
  }

  /**
   * An extension that was not confirmed: refused when so many of {@code nodes} said "not held"
   * ({@code refused}) that the kind's quorum ({@code needed}) is out of reach, else unconfirmed
   * (tried again).
   */
  static Extension outcome(int nodes, int needed, int refused) {
    return refused > nodes - needed ? Extension.REFUSED : Extension.UNCONFIRMED;
  }

  /**
   * The time to a lock's end, given the time to its validity's end: the renew deadline while
   * watched, else validity's end (without a watchdog there is no renew deadline).
   */
  static Duration endIn(Duration untilValidityEnds, Duration ttl, boolean watched) {
    return watched ? untilValidityEnds.minus(renewMargin(ttl)) : untilValidityEnds;
  }
}
