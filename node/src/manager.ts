/**
 * LockManager (client/src/manager.rs): the nodes and options; acquire() runs attempts through the
 * driver (driver.ts, decisions in attempt.ts: docs/protocol.md §3-§5, docs/shared.md), using()
 * adds the watchdog. The held Lock is lock.ts, the options options.ts. Same defaults and meaning
 * as the Rust and Python clients; durations in milliseconds.
 */
import { type AttemptError, type Policy, QUEUE } from "./attempt.js";
import { Backend } from "./backend.js";
import { owed } from "./commit.js";
import { Acquire } from "./driver.js";
import { ArgumentRefusedError, DatabaseRefusedError, LockContendedError, LockLostError, NoQuorumError, NodeError, ValidityExpiredError, WrongKindError } from "./errors.js";
import { type Leader, Leadership, check, leaderOf } from "./election.js";
import { Observer } from "./electionWatch.js";
import { EXCLUSIVE, type Kind } from "./kind.js";
import { CrossSlotSet, Lock, giveBack } from "./lock.js";
import { LocalWaits } from "./localWaits.js";
import { type AcquireOptions, type CampaignOptions, type LockManagerOptions, type SetOptions, atMostTenYears, checkKind, checkMs, settings } from "./options.js";
import { Calls } from "./calls.js";
import { type Resource, nameOf } from "./commands.js";
import { type KeySet, checkSet, setName } from "./sets.js";
import { splitSet } from "./transport/cluster.js";
import { now } from "./timing.js";
import { Nodes, parseNodes } from "./transport/nodes.js";
import { checkLease, unitHint, warnShortTtl } from "./units.js";
export { CrossSlotSet, Lock } from "./lock.js";
export type { AcquireOptions, CampaignOptions, LockManagerOptions, SetOptions } from "./options.js";

/** How long one queued round of a campaign waits before it queues again (ms). */
const CAMPAIGN_ROUND = 60_000;

export class LockManager {
  readonly #backend: Backend;
  /** Whether a node is a Redis Cluster: a set of keys of several slots is then taken slot group by slot group. */
  readonly #clustered: boolean;
  #closed = false;
  /** Whether a TTL that is probably seconds was warned about (once per manager). */
  readonly #units = { warned: false };
  /** One server-side wait per resource; the manager's other callers queue here (localWaits.ts). */
  readonly #localWaits = new LocalWaits();

  constructor(nodes: readonly string[], options: LockManagerOptions = {}) {
    if (!Array.isArray(nodes)) throw new TypeError("nodes must be an array of URL strings");
    if (nodes.length === 0) throw new RangeError("nodes must name at least one Redis URL");
    const parsed = parseNodes(nodes);
    const opts = settings(options, nodes.length);
    const connection = { username: options.username, password: options.password, tls: options.tls };
    const sentinel = { username: options.sentinelUsername, password: options.sentinelPassword };
    this.#backend = new Backend(new Nodes(parsed, { connection, sentinel }, opts.timeout, opts.ack), opts);
    this.#clustered = parsed.some((node) => node.form === "cluster");
  }

  /** The nodes, as named in errors (passwords hidden). */
  get nodes(): string[] {
    return this.#backend.nodes.names();
  }

  /** Takes the lock (or a shared hold, or a semaphore's permit): one attempt, or waiting up to `wait` ms. */
  async acquire(resource: string, options: AcquireOptions): Promise<Lock> {
    const { kind, ttl, wait, signal } = this.#check(resource, options);
    return this.#take(resource, kind, ttl, wait, signal);
  }

  /**
   * Takes every one of `resources` at once, all or nothing, waiting up to `options.wait` ms
   * (default 30000): queued on every key of each node at once (holding none meanwhile, so two sets
   * asked in opposite orders cannot deadlock), or retrying (`waitMode: "retry"`). Each node
   * answers one token for the whole set (DLOCK.ACQUIREALL), so the Lock (`resources` names them)
   * is held, committed, extended, watched and released as one lock. `modes`: one "x" (exclusive)
   * or "s" (shared) per resource, all exclusive by default; the quorum is a majority either way.
   * With a `redis+cluster://` node and keys of several slots, the set is taken slot group by slot
   * group in slot order within the one `wait` (docs/multi.md): a CrossSlotSet, or the first
   * group's failure, the groups already taken released.
   */
  async lockAll(resources: readonly string[], ttl: number, options: SetOptions = {}): Promise<Lock | CrossSlotSet> {
    if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
    const set = checkSet(resources, options.modes);
    const checked = this.#check(setName(set), { ttl, wait: options.wait ?? 30_000, signal: options.signal });
    return this.#takeSet(set, checked.ttl, checked.wait, checked.signal);
  }

  /** One attempt to take every one of `resources` at once, all or nothing (as `lockAll`, without waiting: one attempt per slot group on a Cluster): LockContendedError when any is held. */
  async tryLockAll(resources: readonly string[], ttl: number, options: Omit<SetOptions, "wait"> = {}): Promise<Lock | CrossSlotSet> {
    if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
    const set = checkSet(resources, options.modes);
    const checked = this.#check(setName(set), { ttl, signal: options.signal });
    return this.#takeSet(set, checked.ttl, undefined, checked.signal);
  }

  /**
   * A set: one lock on each node, or, with a Cluster node and keys of several slots, its slot
   * groups one after the other in slot order within the one `wait` (undefined: one attempt each);
   * the groups taken are released when one fails, whose error is thrown unchanged.
   */
  async #takeSet(set: KeySet, ttl: number, wait: number | undefined, signal: AbortSignal | undefined): Promise<Lock | CrossSlotSet> {
    const parts = this.#clustered ? splitSet(set) : [set];
    if (parts.length === 1) return this.#take(set, EXCLUSIVE, ttl, wait, signal);
    const deadline = wait === undefined ? undefined : now() + wait;
    const held: Lock[] = [];
    try {
      for (const part of parts) held.push(await this.#take(part, EXCLUSIVE, ttl, deadline === undefined ? undefined : Math.max(0, deadline - now()), signal));
    } catch (e) {
      await giveBack(held); // nothing is held across a failed group
      throw e;
    }
    return new CrossSlotSet(set.keys, held);
  }

  async #take(resource: Resource, kind: Kind, ttl: number, wait: number | undefined, signal: AbortSignal | undefined): Promise<Lock> {
    // A set, a shared hold and a permit wait on the nodes each time (those are granted together);
    // an exclusive lock, one caller of this manager at once.
    signal?.throwIfAborted();
    if (wait === undefined || !this.#backend.opts.queue || typeof resource !== "string" || kind.type !== "exclusive") {
      return this.#attempt(resource, kind, ttl, wait, signal);
    }
    const deadline = now() + wait;
    const turn = await this.#localWaits.turn(resource, wait, signal);
    try {
      // The wait ran out in the process: one attempt, which answers as a wait that ran out.
      return await this.#attempt(resource, kind, ttl, turn.came ? Math.max(0, deadline - now()) : undefined, signal);
    } finally {
      turn.leave();
    }
  }

  async #attempt(resource: Resource, kind: Kind, ttl: number, wait: number | undefined, signal: AbortSignal | undefined): Promise<Lock> {
    signal?.throwIfAborted();
    const backend = this.#backend;
    // Without a wait, one attempt that does not wait on the nodes; with one, queued (or retrying).
    const policy = this.#policy(wait !== undefined && backend.opts.queue);
    const acquire = new Acquire(new Calls(backend, resource, kind), ttl, now() + (wait ?? 0), policy, signal);
    const result = await acquire.run(wait === undefined);
    if (result.ok) return new Lock(new Calls(backend, resource, kind), ttl, result.granted);
    signal?.throwIfAborted();
    throw this.#error(nameOf(resource), kind, result.error, result.attempts, ttl);
  }

  /**
   * Runs `work` while a watchdog keeps the lock extended, then releases it whatever happens.
   * `lock.signal` aborts when the lock is lost or `maxHold` passes; a lock lost meanwhile makes
   * `using` reject with LockLostError after `work` settled.
   */
  async using<T>(resource: string, options: AcquireOptions, work: (lock: Lock) => Promise<T> | T): Promise<T> {
    if (typeof work !== "function") throw new TypeError("work must be a function");
    const lock = await this.acquire(resource, options);
    const stop = lock.watch(this.#backend.opts.extendInterval ?? options.ttl / 3, this.#backend.opts.maxHold);
    try {
      const out = await work(lock);
      if (lock.lost) throw new LockLostError(resource);
      return out;
    } finally {
      stop();
      await lock.release().catch(() => undefined);
    }
  }

  /**
   * Queues (fairly, on the nodes) to lead `name` with `value` (an address, an id; at most 200
   * bytes) and resolves once elected, its leadership kept by a watchdog extending every ttl / 3
   * (docs/election.md). Waits as long as others lead; an aborted `signal` withdraws the campaign
   * and rejects with its reason. Rejects on anything but contention (NoQuorumError, WrongKindError...).
   * A leadership taken without waiting on the nodes (waitMode "retry") commits its epoch before it
   * resolves; a commit that fails rejects with LockLostError, the hold given back.
   */
  async campaign(name: string, value: string, options: CampaignOptions): Promise<Leadership> {
    check(name, value);
    const { ttl, signal } = this.#check(name, options);
    signal?.throwIfAborted();
    const backend = this.#backend;
    const policy = this.#policy(backend.opts.queue);
    for (;;) {
      // One round waits on the nodes; it is renewed only to bound how stale a forgotten campaign's place gets.
      const calls = new Calls(backend, name, EXCLUSIVE);
      const result = await new Acquire(calls, ttl, now() + CAMPAIGN_ROUND, policy, signal, Acquire.labelled(value)).run(false);
      if (result.ok) {
        const lock = new Lock(calls, ttl, result.granted);
        // The epoch leaves the client committed: a no-wait hold pays its commit before it leads.
        const epoch = await lock.token().catch(async (e: unknown) => {
          await lock.release().catch(() => undefined);
          throw e;
        });
        return new Leadership(lock, value, epoch, () => lock.watch(backend.opts.extendInterval ?? ttl / 3, backend.opts.maxHold));
      }
      signal?.throwIfAborted();
      if (result.error.type !== "contended") throw this.#error(name, EXCLUSIVE, result.error, result.attempts, ttl);
    }
  }

  /** Who leads `name` now (DLOCK.STATUS on every node): null when nobody; NoQuorumError when too few nodes answered to tell. */
  async leader(name: string): Promise<Leader | null> {
    check(name);
    this.#checkOpen();
    return leaderOf(this.#backend, name);
  }

  /**
   * Follows who leads `name` without polling (a blocking DLOCK.OBSERVE per node): an async
   * iterator of changes, the leader first (see Observer). Ends on `break`, when `signal` aborts or
   * when the manager closes.
   */
  observe(name: string, options: { readonly signal?: AbortSignal } = {}): Observer {
    check(name);
    if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
    if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new TypeError("signal must be an AbortSignal");
    this.#checkOpen();
    return new Observer(new Calls(this.#backend, name, EXCLUSIVE), [options.signal, this.#backend.closing.signal]);
  }

  /**
   * Closes every connection, after the background releases finish (each within the call
   * timeout); waits still queued for a lock that was never released are cut short.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#backend.closing.abort(); // observers stop
    const bound = Math.max(4 * this.#backend.opts.timeout, 250);
    let timer: NodeJS.Timeout | undefined;
    const out = new Promise((resolve) => (timer = setTimeout(resolve, bound)));
    let timedOut = false;
    void out.then(() => (timedOut = true));
    // Background work may start more (a late grant's release): wait for that too, within the bound.
    while (this.#backend.background.size > 0 && !timedOut) await Promise.race([Promise.all(this.#backend.background), out]);
    clearTimeout(timer);
    this.#backend.nodes.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #check(resource: unknown, options: AcquireOptions) {
    if (typeof resource !== "string") throw new TypeError("resource must be a non-empty string");
    if (resource === "") throw new RangeError("the resource name must not be empty");
    if (typeof options !== "object" || options === null) throw new TypeError("options must be an object with a ttl");
    const ttl = checkLease(options.ttl, this.#backend.opts.drift);
    const wait = atMostTenYears(checkMs(options.wait, "wait", { optional: true }), "wait");
    warnShortTtl(ttl, this.#units);
    const kind = checkKind(options.shared, options.limit);
    if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new TypeError("signal must be an AbortSignal");
    this.#checkOpen();
    return { kind, ttl, wait, signal: options.signal };
  }

  /**
   * How an acquire asks: queued on the nodes, or one attempt that does not wait on them, which
   * commits its grants only when no commit is owed (commit.ts: an owed commit waits for the
   * token's first read, lock.ts).
   */
  #policy(queued: boolean): Policy {
    if (queued) return QUEUE;
    const { fencing } = this.#backend.opts;
    return { queue: false, commit: fencing && !owed(true, this.#backend.nodes.length, fencing) };
  }

  #checkOpen(): void {
    if (this.#closed) throw new NodeError([], "the lock manager is closed");
  }

  #error(resource: string, kind: Kind, error: AttemptError, attempts: number, ttl: number): Error {
    switch (error.type) {
      case "contended":
        return new LockContendedError(resource, attempts);
      case "no_quorum":
        return new NoQuorumError(resource, this.#backend.needed(kind), error.failures);
      case "wrong_kind":
        return new WrongKindError(resource, error.failure.node, error.failure.reason);
      case "invalid":
        if (error.failure.refused === "database") return new DatabaseRefusedError(resource, error.failure.node, error.failure.reason);
        return new ArgumentRefusedError(resource, error.failure.node, error.failure.reason);
      case "expired":
        return new ValidityExpiredError(resource, unitHint(ttl));
    }
  }
}
