/**
 * The manager's options, checked before any node is asked (TypeError / RangeError), with the
 * defaults the Rust and Python clients use.
 */
import { LockContendedError } from "./errors.js";
import { type Kind, EXCLUSIVE, MAX_LIMIT, quorum } from "./kind.js";
import { type Drift } from "./timing.js";
import type { TlsOptions } from "./connect.js";

export interface LockManagerOptions {
  /** Per-node call timeout, ms (default 50). */
  readonly timeout?: number;
  /** Two-phase quorum fencing: commit the largest granted token on the granting nodes (default true). */
  readonly fencing?: boolean;
  /** "queue" (default): wait on the nodes in ticket order; "retry": try, pause, try again. */
  readonly waitMode?: "queue" | "retry";
  /** "auto" (default: 1 replica on cluster and sentinel nodes, none on plain masters), "off", or a replica count. */
  readonly replicaAck?: "auto" | "off" | number;
  /** How long a write waits for its replicas, ms (default 100). */
  readonly ackTimeout?: number;
  /** Longest `using` keeps a lock extended, ms (default: no cap). */
  readonly maxHold?: number;
  /** Watchdog period, ms (default: ttl / 3). */
  readonly extendInterval?: number;
  /** Pause between attempts, ms (default 25), plus up to retryJitter ms (default 25). */
  readonly retryDelay?: number;
  readonly retryJitter?: number;
  /** Most retries after the first attempt (default: until the wait runs out). */
  readonly retryCount?: number;
  /** Clock-drift allowance: ttl * driftFactor + driftConstant ms (defaults 0.01 and 2). */
  readonly driftFactor?: number;
  readonly driftConstant?: number;
  /** TLS settings for rediss:// nodes. */
  readonly tls?: TlsOptions;
  /** ACL user and password for nodes whose URL names none. */
  readonly username?: string;
  readonly password?: string;
  /** The sentinels' own ACL user and password (redis+sentinel:// nodes). */
  readonly sentinelUsername?: string;
  readonly sentinelPassword?: string;
}

export interface AcquireOptions {
  /**
   * Lease, ms (whole milliseconds, 1 to 86400000). Under 100 is probably seconds typed by habit:
   * taken, with a process warning (DLOCK_UNITS); 10 seconds is `ttl: 10_000`.
   */
  readonly ttl: number;
  /** Wait up to this many ms for the lock; undefined: one attempt (LockContendedError if held). */
  readonly wait?: number;
  /** A shared (reader's) hold. */
  readonly shared?: boolean;
  /** One permit of a semaphore of this limit (1 to 10000). */
  readonly limit?: number;
  /** Cancels a wait and withdraws it from the queues. */
  readonly signal?: AbortSignal;
}

/** The options of `lockAll` / `tryLockAll` (the TTL is their second argument). */
export interface SetOptions {
  /** Wait up to this many ms for the whole set (lockAll; default 30000). */
  readonly wait?: number;
  /** One mode per resource, "x" exclusive or "s" shared (an array, or a string like "xxs"); default all exclusive. */
  readonly modes?: readonly ("x" | "s")[] | string;
  /** Cancels a wait and withdraws it from the queues. */
  readonly signal?: AbortSignal;
}

export interface CampaignOptions {
  /** The leadership's lease, ms (as `AcquireOptions.ttl`): lost at most this long after its holder stops extending. */
  readonly ttl: number;
  /** Withdraws the campaign from the queues; `campaign` then rejects with its reason. */
  readonly signal?: AbortSignal;
}

export interface Settings {
  readonly timeout: number;
  readonly fencing: boolean;
  readonly queue: boolean;
  /** Replicas each write waits for: on every node, or (replicaAck "auto") on failover-managed ones only. */
  readonly ack: { readonly replicas: number; readonly timeout: number; readonly everywhere: boolean } | undefined;
  readonly maxHold: number | undefined;
  readonly extendInterval: number | undefined;
  readonly retryDelay: number;
  readonly retryJitter: number;
  readonly retryCount: number;
  readonly drift: Drift;
}

export const TIMEOUT_RESOLUTION = 100; // a server checks blocked clients' timeouts once per hz tick

/**
 * The longest duration the nodes take in any argument (WAIT's included): ten years, the module's
 * LIMIT_MS. A longer wait is refused before it is sent, where every node would refuse it.
 */
export const MAX_WAIT = 315_360_000_000;

/** A duration sent to the nodes or added to the clock: at most MAX_WAIT. */
export function atMostTenYears<T extends number | undefined>(ms: T, name: string): T {
  if (ms !== undefined && ms > MAX_WAIT) {
    throw new RangeError(`${name} must be at most 315360000000 ms (ten years, the longest the nodes take), got ${ms}`);
  }
  return ms;
}

export function checkMs(value: unknown, name: string, { min = 0, optional = false } = {}): number | undefined {
  if (value === undefined && optional) return undefined;
  if (typeof value !== "number" || Number.isNaN(value)) {
    throw new TypeError(`${name} must be a number of milliseconds, got ${String(value)}`);
  }
  if (!(value >= min) || value === Infinity) throw new RangeError(`${name} must be a finite number >= ${min}, got ${value}`);
  return value;
}

export function checkKind(shared: unknown, limit: unknown): Kind {
  if (shared !== undefined && typeof shared !== "boolean") throw new TypeError(`shared must be a boolean, got ${String(shared)}`);
  if (limit === undefined) return shared ? { type: "shared" } : EXCLUSIVE;
  if (typeof limit !== "number" || !Number.isInteger(limit)) {
    throw new TypeError(`limit must be an integer from 1 to ${MAX_LIMIT}, got ${String(limit)}`);
  }
  if (limit < 1 || limit > MAX_LIMIT) throw new RangeError(`limit must be from 1 to ${MAX_LIMIT}, got ${limit}`);
  if (shared) throw new RangeError(`shared and limit ${limit} are exclusive: a lock's shared side or a semaphore's permit, not both`);
  return { type: "semaphore", limit };
}

export function settings(options: LockManagerOptions, nodes: number): Settings {
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  const fencing = options.fencing ?? true;
  if (typeof fencing !== "boolean") throw new TypeError("fencing must be a boolean");
  const waitMode = options.waitMode ?? "queue";
  if (waitMode !== "queue" && waitMode !== "retry") throw new RangeError(`waitMode must be "queue" or "retry", got ${String(waitMode)}`);
  const ackTimeout = checkMs(options.ackTimeout ?? 100, "ackTimeout")!;
  const replicaAck = options.replicaAck ?? "auto";
  let ack: Settings["ack"];
  if (typeof replicaAck === "number") {
    if (!Number.isInteger(replicaAck) || replicaAck < 0) throw new RangeError(`replicaAck must be "auto", "off" or a count >= 0, got ${replicaAck}`);
    ack = replicaAck > 0 ? { replicas: replicaAck, timeout: ackTimeout, everywhere: true } : undefined;
  } else if (replicaAck === "auto") {
    ack = { replicas: 1, timeout: ackTimeout, everywhere: false }; // on cluster and sentinel nodes only
  } else if (replicaAck !== "off") {
    throw new TypeError(`replicaAck must be "auto", "off" or a count, got ${String(replicaAck)}`);
  }
  for (const key of ["username", "password", "sentinelUsername", "sentinelPassword"] as const) {
    if (options[key] !== undefined && typeof options[key] !== "string") throw new TypeError(`${key} must be a string`);
  }
  if (options.tls !== undefined && (typeof options.tls !== "object" || options.tls === null)) throw new TypeError("tls must be an object");
  if (options.driftFactor !== undefined && options.driftFactor >= 1) {
    throw new RangeError(`driftFactor must be below 1 (a share of the TTL), got ${options.driftFactor}`);
  }
  const made = assembled(options, { fencing, waitMode, ack, ackTimeout }, nodes);
  for (const key of ["timeout", "maxHold", "extendInterval", "retryDelay", "retryJitter"] as const) atMostTenYears(made[key], key);
  atMostTenYears(ackTimeout, "ackTimeout");
  return made;
}

function assembled(
  options: LockManagerOptions,
  { fencing, waitMode, ack }: { fencing: boolean; waitMode: string; ack: Settings["ack"]; ackTimeout: number },
  nodes: number,
): Settings {
  return {
    timeout: checkMs(options.timeout ?? 50, "timeout", { min: 1 })!,
    fencing,
    queue: waitMode === "queue" && (fencing || nodes === 1),
    ack,
    maxHold: checkMs(options.maxHold, "maxHold", { min: 1, optional: true }),
    extendInterval: checkMs(options.extendInterval, "extendInterval", { min: 1, optional: true }),
    retryDelay: checkMs(options.retryDelay ?? 25, "retryDelay")!,
    retryJitter: checkMs(options.retryJitter ?? 25, "retryJitter")!,
    retryCount: options.retryCount === undefined ? Infinity : checkMs(options.retryCount, "retryCount")!,
    drift: {
      factor: checkMs(options.driftFactor ?? 0.01, "driftFactor")!,
      constantMs: checkMs(options.driftConstant ?? 2, "driftConstant")!,
    },
  };
}

