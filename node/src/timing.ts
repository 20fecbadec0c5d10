/**
 * Redlock's arithmetic, free of I/O (client/src/timing.rs, python/src/dlock/_pure/timing.py):
 * quorum sizes, clock-drift allowance, validity, owners and tickets. Durations are milliseconds.
 */
import { randomBytes } from "node:crypto";

/** A majority of `nodes`: N/2 + 1. */
export function majority(nodes: number): number {
  return Math.floor(nodes / 2) + 1;
}

/**
 * Nodes a permit of a semaphore of `limit` k must be held on: the smallest q with
 * q > N*k/(k+1), so k+1 holders can never each gather a quorum (docs/shared.md).
 */
export function semaphoreQuorum(nodes: number, limit: number): number {
  const k = Math.max(1, limit);
  return Math.floor((nodes * k) / (k + 1)) + 1;
}

export interface Drift {
  /** Share of the TTL the nodes' clocks may disagree by (0.01: 1%). */
  readonly factor: number;
  /** Plus this many ms. */
  readonly constantMs: number;
}

export const DEFAULT_DRIFT: Drift = { factor: 0.01, constantMs: 2 };

/**
 * Milliseconds a hold is still safe to use after an operation that started `elapsedMs` ago:
 * ttl - elapsed - (ttl * factor + constant), or undefined when nothing is left.
 */
export function validity(ttlMs: number, elapsedMs: number, drift: Drift = DEFAULT_DRIFT): number | undefined {
  const left = ttlMs - Math.max(0, elapsedMs) - (ttlMs * Math.max(0, drift.factor) + drift.constantMs);
  return left > 1e-6 ? left : undefined; // under a nanosecond is float rounding, not time left
}

/** 128 random bits in hex: unique per acquisition, as the protocol requires. */
export function newOwner(): string {
  return randomBytes(16).toString("hex");
}

/**
 * Each round of an attempt asks under its own owner, so a late RELEASE of an old round cannot free
 * the next; a campaign's owners end with its label (` <value>`: docs/election.md).
 */
export function roundOwner(base: string, round: number, label = ""): string {
  return `${base}:${round}${label}`;
}

let lastTicket = 0n;

/**
 * Wall-clock microseconds, strictly increasing within this process: equal tickets cannot wound
 * each other. Across processes a tie costs only time, never safety.
 */
export function drawTicket(): bigint {
  const nowUs = BigInt(Date.now()) * 1000n + BigInt(Math.floor((performance.now() % 1) * 1000));
  lastTicket = nowUs > lastTicket ? nowUs : lastTicket + 1n;
  return lastTicket;
}

/** Monotonic milliseconds. */
export function now(): number {
  return performance.now();
}

/** The longest delay setTimeout takes: 2^31 - 1 ms (24.8 days); a longer one fires after 1 ms. */
export const MAX_TIMER = 2 ** 31 - 1;

/**
 * Calls `fn` after `ms`, however long: a wait may last up to ten years (the longest the nodes
 * take), which one setTimeout cannot hold (it would fire at once, with a TimeoutOverflowWarning,
 * and a waiting acquire would turn into a reconnect loop), so the time is slept in timers of at
 * most MAX_TIMER each. The WAIT sent to the nodes is not cut: a node holds a wait that long
 * itself. Returns what cancels it.
 */
export function later(fn: () => void, ms: number): () => void {
  const until = performance.now() + Math.max(0, ms);
  let handle: NodeJS.Timeout | undefined;
  const arm = (): void => {
    const left = Math.max(0, until - performance.now());
    handle = left > MAX_TIMER ? setTimeout(arm, MAX_TIMER) : setTimeout(fn, left);
  };
  arm();
  return () => clearTimeout(handle);
}
