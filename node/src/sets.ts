/**
 * Sets: several resources taken all or nothing (DLOCK.ACQUIREALL and its kin, docs/commands.md;
 * conformance/sets.json; python/src/dlock/_pure/sets.py). On each node a set is one lock: one
 * token or nil for the whole set, one lease, so the quorum engine (driver, commit, renewal,
 * release) runs it unchanged and only the commands differ (commands.ts). Its quorum is the
 * exclusive one (a majority) even when some members are shared.
 */

/** The most keys one set may name (the module's MAX_SET). */
export const MAX_SET = 16;

/** A mode per key: x exclusive, s shared. */
export type Mode = "x" | "s";

/** The keys of a set in the caller's order, and their modes (undefined: all exclusive). */
export interface KeySet {
  readonly keys: readonly string[];
  readonly modes?: string;
}

/**
 * The set asked for, or TypeError / RangeError (the invalid-argument errors) before anything is
 * sent: no key, a key twice, more than MAX_SET, modes that are not one x/s per key.
 */
export function checkSet(resources: unknown, modes?: unknown): KeySet {
  if (!Array.isArray(resources)) throw new TypeError("resources must be an array of strings");
  if (!resources.every((key) => typeof key === "string")) throw new TypeError("resources must be an array of strings");
  const keys = resources as string[];
  if (keys.length === 0) throw new RangeError("a set needs at least one resource");
  if (keys.length > MAX_SET) throw new RangeError(`a set takes at most ${MAX_SET} resources, got ${keys.length}`);
  if (keys.includes("")) throw new RangeError("the resource name must not be empty");
  const twice = keys.find((key, i) => keys.indexOf(key) !== i);
  if (twice !== undefined) throw new RangeError(`resource ${JSON.stringify(twice)} is given twice in the set`);
  const letters = checkModes(modes, keys.length);
  return letters === undefined ? { keys: [...keys] } : { keys: [...keys], modes: letters };
}

/** One letter per key (an array of "x" / "s", or a string like "xs"); undefined when all are exclusive. */
function checkModes(modes: unknown, count: number): string | undefined {
  if (modes === undefined || modes === null) return undefined;
  const list = typeof modes === "string" ? [...modes] : modes;
  if (!Array.isArray(list) || !list.every((m) => typeof m === "string")) throw new TypeError("modes must be an array of 'x' / 's', one per resource");
  if (list.length !== count || !list.every((m) => m === "x" || m === "s")) {
    throw new RangeError(`modes must be one 'x' (exclusive) or 's' (shared) per resource, got ${JSON.stringify(list)}`);
  }
  const letters = list.join("");
  return letters.includes("s") ? letters : undefined;
}

/** Compares keys by their UTF-8 bytes. */
export function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** The set's name in errors: its keys joined by commas. */
export function setName(set: KeySet): string {
  return set.keys.join(",");
}
