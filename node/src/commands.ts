/**
 * Every DLOCK.* command the client sends, built here and nowhere else (client/src/commands.rs,
 * python/src/dlock/_pure/commands.py), as argument arrays. Durations are whole milliseconds.
 */
import { type Kind } from "./kind.js";

/** `DLOCK.ACQUIRE resource owner ttl [kind]`: token, or nil when held by another owner. */
export function acquire(resource: string, owner: string, ttl: number, kind: Kind): string[] {
  return ["DLOCK.ACQUIRE", resource, owner, String(ttl), ...kindArgs(kind)];
}

/**
 * `DLOCK.ACQUIRE resource owner ttl WAIT timeout [TICKET t] [kind]`: token, or nil when the wait
 * ended without a grant. Blocks on the node: a connection of its own.
 */
export function wait(resource: string, owner: string, ttl: number, timeout: number, ticket: bigint | undefined, kind: Kind): string[] {
  const ticketed = ticket === undefined ? [] : ["TICKET", ticket.toString()];
  return ["DLOCK.ACQUIRE", resource, owner, String(ttl), "WAIT", String(timeout), ...ticketed, ...kindArgs(kind)];
}

/** `DLOCK.FENCE resource owner token [PX ttl]`: 1 committed, 0 not held. */
export function fence(resource: string, owner: string, token: bigint, ttl?: number): string[] {
  return ["DLOCK.FENCE", resource, owner, token.toString(), ...(ttl === undefined ? [] : ["PX", String(ttl)])];
}

/** `DLOCK.EXTEND resource owner ttl`: 1 extended, 0 not held. */
export function extend(resource: string, owner: string, ttl: number): string[] {
  return ["DLOCK.EXTEND", resource, owner, String(ttl)];
}

/** `DLOCK.RELEASE resource owner`: 1 released, 0 not held. */
export function release(resource: string, owner: string): string[] {
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
