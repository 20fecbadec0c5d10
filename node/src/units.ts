/**
 * Durations are numbers of milliseconds, as everywhere in Node (setTimeout). A TTL under 100 ms is
 * more likely seconds typed by habit (ttl: 10): it is taken, with a process warning saying so
 * (once per manager), and the errors it leads to say it too (docs/units.md).
 */
import { checkMs } from "./options.js";

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
