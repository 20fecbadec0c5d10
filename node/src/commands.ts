/**
 * Every DLOCK.* command the client sends, built here and nowhere else (client/src/commands.rs,
 * python/src/dlock/_pure/commands.py), as argument arrays. Durations are whole milliseconds.
 */
import { type Kind } from "./kind.js";
import { type KeySet, setName } from "./sets.js";

/** What a lock is taken on: one resource, or a set of them all or nothing (sets.ts), taken by the same engine with the *ALL commands. */
export type Resource = string | KeySet;

/** The name errors give: the resource, or a set's keys joined by commas. */
export function nameOf(resource: Resource): string {
  return typeof resource === "string" ? resource : setName(resource);
}

const setKeys = (set: KeySet): string[] => [String(set.keys.length), ...set.keys];
/** MODES only when some key is shared. */
const modes = (set: KeySet): string[] => (set.modes === undefined ? [] : ["MODES", set.modes]);

/** `DLOCK.ACQUIREALL numkeys key... owner ttl [MODES m]`: one token for the set, or nil when not every key is available. */
export function acquireAll(set: KeySet, owner: string, ttl: number): string[] {
  return ["DLOCK.ACQUIREALL", ...setKeys(set), owner, String(ttl), ...modes(set)];
}

/** `DLOCK.ACQUIREALL ... WAIT timeout [TICKET t]`: queued on every key at once, holding nothing, until all are granted. */
export function waitAll(set: KeySet, owner: string, ttl: number, timeout: number, ticket: bigint | undefined): string[] {
  const ticketed = ticket === undefined ? [] : ["TICKET", ticket.toString()];
  return [...acquireAll(set, owner, ttl), "WAIT", String(timeout), ...ticketed];
}

/** `DLOCK.FENCEALL numkeys key... owner token [PX ttl]`: 1 committed on every key, else 0 (the rest given back). */
export function fenceAll(set: KeySet, owner: string, token: bigint, ttl?: number): string[] {
  return ["DLOCK.FENCEALL", ...setKeys(set), owner, token.toString(), ...(ttl === undefined ? [] : ["PX", String(ttl)])];
}

/** `DLOCK.EXTENDALL numkeys key... owner ttl`: 1 when every key is held under one token, else 0 (the rest given back). */
export function extendAll(set: KeySet, owner: string, ttl: number): string[] {
  return ["DLOCK.EXTENDALL", ...setKeys(set), owner, String(ttl)];
}

/** `DLOCK.RELEASEALL numkeys key... owner`: how many of the keys owner held (its queued wait withdrawn too). */
export function releaseAll(set: KeySet, owner: string): string[] {
  return ["DLOCK.RELEASEALL", ...setKeys(set), owner];
}

/** `DLOCK.ACQUIRE resource owner ttl [kind]`: token, or nil when held by another owner. */
export function acquire(resource: Resource, owner: string, ttl: number, kind: Kind): string[] {
  if (typeof resource !== "string") return acquireAll(resource, owner, ttl);
  return ["DLOCK.ACQUIRE", resource, owner, String(ttl), ...kindArgs(kind)];
}

/**
 * `DLOCK.ACQUIRE resource owner ttl WAIT timeout [TICKET t] [kind]`: token, or nil when the wait
 * ended without a grant. Blocks on the node: a connection of its own.
 */
export function wait(resource: Resource, owner: string, ttl: number, timeout: number, ticket: bigint | undefined, kind: Kind): string[] {
  if (typeof resource !== "string") return waitAll(resource, owner, ttl, timeout, ticket);
  const ticketed = ticket === undefined ? [] : ["TICKET", ticket.toString()];
  return ["DLOCK.ACQUIRE", resource, owner, String(ttl), "WAIT", String(timeout), ...ticketed, ...kindArgs(kind)];
}

/** `DLOCK.FENCE resource owner token [PX ttl]`: 1 committed, 0 not held. */
export function fence(resource: Resource, owner: string, token: bigint, ttl?: number): string[] {
  if (typeof resource !== "string") return fenceAll(resource, owner, token, ttl);
  return ["DLOCK.FENCE", resource, owner, token.toString(), ...(ttl === undefined ? [] : ["PX", String(ttl)])];
}

/** `DLOCK.EXTEND resource owner ttl`: 1 extended, 0 not held. */
export function extend(resource: Resource, owner: string, ttl: number): string[] {
  if (typeof resource !== "string") return extendAll(resource, owner, ttl);
  return ["DLOCK.EXTEND", resource, owner, String(ttl)];
}

/** `DLOCK.RELEASE resource owner`: 1 released, 0 not held. */
export function release(resource: Resource, owner: string): string[] {
  if (typeof resource !== "string") return releaseAll(resource, owner);
  return ["DLOCK.RELEASE", resource, owner];
}

/** `DLOCK.PROCLAIM resource owner token new-owner`: 1 when `owner` held it with `token` (now `newOwner` does), 0 not. */
export function proclaim(resource: string, owner: string, token: bigint, newOwner: string): string[] {
  return ["DLOCK.PROCLAIM", resource, owner, token.toString(), newOwner];
}

/** `DLOCK.STATUS resource`: nil when free, else its fields as name/value pairs. */
export function status(resource: string): string[] {
  return ["DLOCK.STATUS", resource];
}

/**
 * `DLOCK.OBSERVE resource [AFTER token OWNER owner] TIMEOUT ms`: the plain lock's holder (nil when
 * free), at once when it differs from `after` ([0n, ""]: seen free), else when it changes, its
 * lease ends, or at the timeout. Blocks on the node: a connection of its own.
 */
export function observe(resource: string, after: readonly [bigint, string] | undefined, timeout: number): string[] {
  const seen = after === undefined ? [] : ["AFTER", after[0].toString(), "OWNER", after[1]];
  return ["DLOCK.OBSERVE", resource, ...seen, "TIMEOUT", String(timeout)];
}

/** The ACQUIRE option naming the kind, last on every ACQUIRE of an acquisition. */
function kindArgs(kind: Kind): string[] {
  if (kind.type === "shared") return ["SHARED"];
  if (kind.type === "semaphore") return ["LIMIT", String(kind.limit)];
  return [];
}
