/**
 * Durations are numbers of milliseconds, as everywhere in Node (setTimeout). A TTL under 100 ms is
 * more likely seconds typed by habit (ttl: 10): it is taken, with a process warning saying so
 * (once per manager), and the errors it leads to say it too (docs/units.md).
 */
import { checkMs } from "./options.js";
import { type Drift, validity } from "./timing.js";

/** The longest TTL the nodes take by default (dlock.max-ttl-ms): a day. */
export const MAX_TTL = 86_400_000;
/** A TTL below this many ms is probably seconds. */
export const LIKELY_SECONDS = 100;

/** The TTL in whole milliseconds, checked before any node is asked. */
export function checkTtl(value: unknown): number {
  const ttl = Math.floor(checkMs(value, "ttl", { min: 1 })!);
  if (ttl > MAX_TTL) {
    throw new RangeError(`ttl must be from 1 ms to 1 day (86400000 ms, the nodes' default dlock.max-ttl-ms), got ${ttl}`);
  }
  return ttl;
}

/**
 * checkTtl, and a TTL that leaves some validity after the clock drift allowance (validity is
 * ttl - elapsed - drift: a shorter one is never valid, and asking for it would only retry until
 * the wait ran out). The message names the shortest.
 */
export function checkLease(value: unknown, drift: Drift): number {
  const ttl = checkTtl(value);
  if (validity(ttl, 0, drift) !== undefined) return ttl;
  const allowance = `the clock drift allowance (${drift.factor * 100}% of the TTL + ${drift.constantMs} ms)`;
  const shortest = shortestTtl(drift);
  if (shortest === undefined) throw new RangeError(`no ttl leaves any validity after ${allowance}: lower the drift allowance`);
  throw new RangeError(`ttl must be at least ${shortest} ms: a shorter one leaves no validity after ${allowance}, got ${ttl} ms`);
}

/** The shortest whole-millisecond TTL with some validity after the drift allowance. */
export function shortestTtl(drift: Drift): number | undefined {
  if (drift.factor >= 1) return undefined;
  // ttl * (1 - factor) > constant; the loop settles what floating point leaves in doubt.
  for (let ms = Math.max(1, Math.floor(drift.constantMs / (1 - drift.factor)) - 1); ms <= MAX_TTL; ms++) {
    if (validity(ms, 0, drift) !== undefined) return ms;
  }
  return undefined;
}

/** What an error caused by a too-short TTL adds: the unit it was probably meant in. */
export function unitHint(ttl: number): string {
  if (ttl >= LIKELY_SECONDS) return "";
  return ` (ttl ${ttl} ms: dlock takes milliseconds; ${ttl} seconds is ttl: ${ttl * 1000})`;
}

/** Warns once per `seen` (a manager) about a TTL that is probably seconds. */
export function warnShortTtl(ttl: number, seen: { warned: boolean }): void {
  if (ttl >= LIKELY_SECONDS || seen.warned) return;
  seen.warned = true;
  process.emitWarning(`ttl ${ttl} is ${ttl} milliseconds: dlock takes milliseconds (ttl: 10_000 is ten seconds)`, {
    type: "DlockUnitWarning",
    code: "DLOCK_UNITS",
  });
}
