/**
 * When a held lock's watchdog extends it, and when it declares the lock lost: the one lease-loss
 * contract every client keeps (client/src/renewal.rs, docs/election.md, conformance/renewals.json).
 *
 * A lock is lost at its *renew deadline*, `renewMargin` before its validity ends, unless an
 * extension confirmed by a quorum came first: never after the lease may already have ended on the
 * nodes, so the holder has the margin to stop before anyone else can be granted. An extension the
 * nodes refused (a quorum is out of reach: they say it is not held) is a loss at once; one that
 * could not be confirmed (nodes unreachable, too slow) is tried again, at shorter and shorter
 * pauses, until the renew deadline. Whole milliseconds, integer division, as every client counts.
 */

/** How the last extension went (the grant itself counts as "extended"). */
export type Extension =
  | "extended"
  /** Enough nodes said "not held" that no quorum can extend it any more. */
  | "refused"
  /** Not confirmed: too few nodes answered, or too late to count. */
  | "unconfirmed";

/** What the watchdog does next: send the next extension after `extendIn` ms, or declare the lock lost. */
export type Renewal = { readonly extendIn: number } | "lost";

const whole = (ms: number): number => Math.max(0, Math.floor(ms));

/** How long (ms) before its validity ends a lock without a confirmed extension is declared lost: a tenth of the TTL, at least 1 ms. */
export function renewMargin(ttl: number): number {
  return Math.max(1, Math.floor(whole(ttl) / 10));
}

/** The next step, with `left` ms of validity, the watchdog's `interval`, after `last`. */
export function renewal(ttl: number, interval: number, left: number, last: Extension): Renewal {
  const margin = renewMargin(ttl);
  const rest = whole(left);
  if (last === "refused" || rest <= margin) return "lost";
  const pause = last === "unconfirmed" ? Math.floor(whole(interval) / 2) : whole(interval);
  // Halfway to the renew deadline at the latest: the extension has time to be confirmed.
  const toDeadline = rest - margin;
  return { extendIn: Math.max(1, Math.min(pause, Math.floor(toDeadline / 2))) };
}
