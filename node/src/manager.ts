/**
 * LockManager and Lock: the Redlock rounds with two-phase quorum fencing (docs/protocol.md §3-§4),
 * queue-mode waiting with tickets (§5, the machine of acquisition.ts), shared holds and semaphore
 * permits with their quorum (docs/shared.md). Same defaults and meaning as the Rust and Python
 * clients; durations in milliseconds.
 */
import { Acquisition, type Event, type Step } from "./acquisition.js";
import {
  LockContendedError,
  LockLostError,
  NoQuorumError,
  NodeError,
  ValidityExpiredError,
  WrongKindError,
  isWrongKind,
  type NodeFailure,
} from "./errors.js";
import { Failed, RedisNode, type Reply, type TlsOptions } from "./node.js";
import { ClusterNode } from "./cluster.js";
import { SentinelNode } from "./sentinel.js";
import {
  type Drift,
  type Kind,
  EXCLUSIVE,
  MAX_LIMIT,
  drawTicket,
  kindArgs,
  newOwner,
  now,
  quorum,
  roundOwner,
  validity,
} from "./timing.js";
import { parseNode } from "./urls.js";
import {
  type AttemptError,
  type Vote,
  commitVerdict,
  countVotes,
  nodesWorthAskingAgain,
  quorumToken,
} from "./verdicts.js";

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
  /** Lease, ms (whole milliseconds, at least 1). */
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

interface Settings {
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

const TIMEOUT_RESOLUTION = 100; // a server checks blocked clients' timeouts once per hz tick

function checkMs(value: unknown, name: string, { min = 0, optional = false } = {}): number | undefined {
  if (value === undefined && optional) return undefined;
  if (typeof value !== "number" || Number.isNaN(value)) {
    throw new TypeError(`${name} must be a number of milliseconds, got ${String(value)}`);
  }
  if (!(value >= min) || value === Infinity) throw new RangeError(`${name} must be a finite number >= ${min}, got ${value}`);
  return value;
}

function checkKind(shared: unknown, limit: unknown): Kind {
  if (shared !== undefined && typeof shared !== "boolean") throw new TypeError(`shared must be a boolean, got ${String(shared)}`);
  if (limit === undefined) return shared ? { type: "shared" } : EXCLUSIVE;
  if (typeof limit !== "number" || !Number.isInteger(limit)) {
    throw new TypeError(`limit must be an integer from 1 to ${MAX_LIMIT}, got ${String(limit)}`);
  }
  if (limit < 1 || limit > MAX_LIMIT) throw new RangeError(`limit must be from 1 to ${MAX_LIMIT}, got ${limit}`);
  if (shared) throw new RangeError(`shared and limit ${limit} are exclusive: a lock's shared side or a semaphore's permit, not both`);
  return { type: "semaphore", limit };
}

function settings(options: LockManagerOptions, nodes: number): Settings {
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

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const isOne = (reply: Reply | undefined): boolean => reply === "1";

function tokenOf(reply: Reply): bigint | undefined {
  if (typeof reply === "string" && /^\d+$/.test(reply)) {
    const token = BigInt(reply);
    return token > 0n ? token : undefined;
  }
  return undefined;
}

interface Outcome {
  readonly reply?: Reply;
  readonly failure?: NodeFailure;
}

/** Nodes, settings and the calls every round makes. */
class Shared {
  readonly needed: (kind: Kind) => number;
  readonly background = new Set<Promise<unknown>>();

  constructor(
    readonly nodes: ReadonlyArray<RedisNode | SentinelNode | ClusterNode>,
    readonly opts: Settings,
  ) {
    this.needed = (kind) => quorum(nodes.length, kind);
  }

  /** Keeps a background promise until it settles (close() waits for them). */
  spawn(work: Promise<unknown>): void {
    const p = work.catch(() => undefined);
    this.background.add(p);
    void p.finally(() => this.background.delete(p));
  }

  /** One command on one node, with its replica acknowledgement when it writes. */
  async call(node: number, args: string[], { acked = false, blocking = 0 } = {}): Promise<Outcome> {
    const n = this.nodes[node]!;
    const ack = acked && (this.opts.ack?.everywhere || !(n instanceof RedisNode)) ? this.opts.ack : undefined;
    const extra = ack ? ack.timeout + TIMEOUT_RESOLUTION : 0;
    try {
      const whole = this.opts.timeout + blocking + extra;
      const replies = ack
        ? await n.pipeline([args, ["WAIT", String(ack.replicas), String(ack.timeout)]], this.opts.timeout, whole, blocking > 0)
        : [await (blocking > 0 ? n.callBlocking(args, this.opts.timeout, whole) : n.call(args, this.opts.timeout))];
      const reply = replies[0]!;
      if (ack && (tokenOf(reply) !== undefined || isOne(reply))) {
        const acked = Number(replies[1] ?? 0);
        if (acked < ack.replicas) {
          return { failure: { node: n.name, reason: `written but only ${acked} of ${ack.replicas} replicas acknowledged within ${ack.timeout} ms` } };
        }
      }
      return { reply };
    } catch (e) {
      return { failure: e instanceof Failed ? e.failure : { node: n.name, reason: String(e) } };
    }
  }

  everywhere(): number[] {
    return this.nodes.map((_, i) => i);
  }

  /** RELEASE `owner` on `nodes`: how many released, refused, and which could not be reached. */
  async release(resource: string, owner: string, nodes = this.everywhere()): Promise<Tally> {
    const outcomes = await Promise.all(nodes.map((n) => this.call(n, ["DLOCK.RELEASE", resource, owner])));
    return tally(outcomes);
  }

  retryPause(): number {
    return this.opts.retryDelay + Math.random() * this.opts.retryJitter;
  }

  validity(ttl: number, since: number): number | undefined {
    return validity(ttl, now() - since, this.opts.drift);
  }
}

interface Tally {
  done: number;
  refused: number;
  unreachable: NodeFailure[];
}

function tally(outcomes: readonly Outcome[]): Tally {
  const t: Tally = { done: 0, refused: 0, unreachable: [] };
  for (const o of outcomes) {
    if (o.failure) t.unreachable.push(o.failure);
    else if (isOne(o.reply)) t.done += 1;
    else t.refused += 1;
  }
  return t;
}

type Granted = { readonly owner: string; readonly token: bigint; readonly validity: number; readonly stale?: AbortController };
type Attempt = { ok: true; granted: Granted } | { ok: false; error: AttemptError };

export class LockManager {
  readonly #shared: Shared;
  #closed = false;

  constructor(nodes: readonly string[], options: LockManagerOptions = {}) {
    if (!Array.isArray(nodes)) throw new TypeError("nodes must be an array of URL strings");
    if (nodes.length === 0) throw new RangeError("nodes must name at least one Redis URL");
    const parsed = nodes.map(parseNode);
    const names = parsed.map((p) => p.name);
    if (new Set(names).size !== names.length) throw new RangeError(`node URLs must be distinct, got ${names.join(", ")}`);
    const opts = settings(options, nodes.length);
    const connection = { username: options.username, password: options.password, tls: options.tls };
    const sentinelLogin = { username: options.sentinelUsername, password: options.sentinelPassword };
    const made = parsed.map((p) => {
      if (p.form === "single") return new RedisNode(p.name, p.url, connection, opts.timeout);
      if (p.form === "sentinel") {
        // The URL's login is the master's; without one, the manager's.
        const master = p.login.password !== undefined ? { tls: options.tls, ...p.login } : connection;
        return new SentinelNode(p.name, p.sentinels, p.service, p.tls, master, sentinelLogin, opts.timeout);
      }
      const masters = p.login.password !== undefined ? { tls: options.tls, ...p.login } : connection;
      return new ClusterNode(p.name, p.host, p.port, p.tls, masters, opts.timeout);
    });
    this.#shared = new Shared(made, opts);
  }

  /** The nodes, as named in errors (passwords hidden). */
  get nodes(): string[] {
    return this.#shared.nodes.map((n) => n.name);
  }

  /** Takes the lock (or a shared hold, or a semaphore's permit): one attempt, or waiting up to `wait` ms. */
  async acquire(resource: string, options: AcquireOptions): Promise<Lock> {
    const { kind, ttl, wait, signal } = this.#check(resource, options);
    signal?.throwIfAborted();
    const shared = this.#shared;
    const deadline = now() + (wait ?? 0);
    let attempts = 0;
    let result: Attempt;
    const ticket = wait !== undefined && shared.opts.queue && shared.nodes.length > 1 ? drawTicket() : undefined;
    // Retry mode asks again as the same owner (ACQUIRE is idempotent for it: a grant whose reply
    // was lost comes back); queue mode draws a new owner per attempt (a round's owner is its own).
    const owner = newOwner();
    for (;;) {
      attempts += 1;
      result =
        wait !== undefined && shared.opts.queue
          ? await this.#queueAttempt(resource, kind, ttl, deadline, ticket, signal)
          : await this.#roundAttempt(resource, owner, kind, ttl);
      if (result.ok) return new Lock(shared, resource, kind, ttl, result.granted);
      const error = result.error;
      if (wait === undefined || error.type === "wrong_kind" || signal?.aborted) break;
      if (shared.opts.queue && error.type === "contended") break; // the queue waited to the deadline
      const pause = shared.retryPause();
      if (now() + pause > deadline || attempts > shared.opts.retryCount) break;
      await sleep(pause);
    }
    signal?.throwIfAborted();
    throw this.#error(resource, kind, result.error, attempts);
  }

  /**
   * Runs `work` while a watchdog keeps the lock extended, then releases it whatever happens.
   * `lock.signal` aborts when the lock is lost or `maxHold` passes; a lock lost meanwhile makes
   * `using` reject with LockLostError after `work` settled.
   */
  async using<T>(resource: string, options: AcquireOptions, work: (lock: Lock) => Promise<T> | T): Promise<T> {
    if (typeof work !== "function") throw new TypeError("work must be a function");
    const lock = await this.acquire(resource, options);
    const stop = lock.watch(this.#shared.opts.extendInterval ?? options.ttl / 3, this.#shared.opts.maxHold);
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
   * Closes every connection, after the background releases finish (each within the call
   * timeout); waits still queued for a lock that was never released are cut short.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const bound = Math.max(4 * this.#shared.opts.timeout, 250);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(this.#shared.background), new Promise((resolve) => (timer = setTimeout(resolve, bound)))]);
    clearTimeout(timer);
    for (const node of this.#shared.nodes) node.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #check(resource: unknown, options: AcquireOptions) {
    if (typeof resource !== "string" || resource === "") throw new TypeError("resource must be a non-empty string");
    if (typeof options !== "object" || options === null) throw new TypeError("options must be an object with a ttl");
    const ttl = Math.floor(checkMs(options.ttl, "ttl", { min: 1 })!);
    const wait = checkMs(options.wait, "wait", { optional: true });
    const kind = checkKind(options.shared, options.limit);
    if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new TypeError("signal must be an AbortSignal");
    if (this.#closed) throw new NodeError([], "the lock manager is closed");
    return { kind, ttl, wait, signal: options.signal };
  }

  #error(resource: string, kind: Kind, error: AttemptError, attempts: number): Error {
    switch (error.type) {
      case "contended":
        return new LockContendedError(resource, attempts);
      case "no_quorum":
        return new NoQuorumError(resource, this.#shared.needed(kind), error.failures);
      case "wrong_kind":
        return new WrongKindError(resource, error.failure.node, error.failure.reason);
      case "expired":
        return new ValidityExpiredError(resource);
    }
  }

  /** One round on every node (docs/protocol.md §3-§4); everything granted is released on failure. */
  async #roundAttempt(resource: string, owner: string, kind: Kind, ttl: number): Promise<Attempt> {
    const shared = this.#shared;
    const needed = shared.needed(kind);
    const args = ["DLOCK.ACQUIRE", resource, owner, String(ttl), ...kindArgs(kind)];
    const vote = async (n: number): Promise<Vote> => {
      const { reply, failure } = await shared.call(n, args, { acked: true });
      if (failure) return { type: "failed", failure };
      if (reply === null) return { type: "refused" };
      const token = tokenOf(reply!);
      return token !== undefined ? { type: "granted", token } : { type: "failed", failure: { node: shared.nodes[n]!.name, reason: `unexpected reply ${JSON.stringify(reply)}` } };
    };
    const started = now();
    const votes = await Promise.all(shared.everywhere().map(vote));
    const again = nodesWorthAskingAgain(votes, needed);
    (await Promise.all(again.map(vote))).forEach((v, i) => (votes[again[i]!] = v));
    const count = countVotes(votes);
    const fail = (error: AttemptError): Attempt => {
      shared.spawn(shared.release(resource, owner));
      return { ok: false, error };
    };
    const phase1 = quorumToken(shared.nodes.length, needed, count);
    if (!phase1.ok) return fail(phase1.error);
    if (shared.opts.fencing && shared.nodes.length > 1) {
      if (shared.validity(ttl, started) === undefined) return fail({ type: "expired" });
      const fenced = await Promise.all(
        count.grants.map(([n]) => shared.call(n, ["DLOCK.FENCE", resource, owner, phase1.token.toString()], { acked: true })),
      );
      const refused = fenced.flatMap((o, i) =>
        o.failure ? [o.failure] : isOne(o.reply) ? [] : [{ node: shared.nodes[count.grants[i]![0]]!.name, reason: "fence refused: lock no longer held" }],
      );
      const error = commitVerdict(needed, count, refused, shared.validity(ttl, started) !== undefined);
      if (error) return fail(error);
    }
    const left = shared.validity(ttl, started);
    if (left === undefined) return fail({ type: "expired" });
    return { ok: true, granted: { owner, token: phase1.token, validity: left } };
  }

  /**
   * One queue-mode attempt (client/src/waiting.rs): rounds of wait and commit, driven by the
   * acquisition machine, until held, impossible, the deadline, or the signal.
   */
  async #queueAttempt(resource: string, kind: Kind, ttl: number, deadline: number, ticket: bigint | undefined, signal: AbortSignal | undefined): Promise<Attempt> {
    const shared = this.#shared;
    const nodes = shared.nodes.length;
    const base = newOwner();
    const [machine, first] = Acquisition.start(nodes, shared.needed(kind));
    const why: Array<NodeFailure | "timed_out" | undefined> = new Array(nodes).fill(undefined);
    let wrongKind: NodeFailure | undefined;
    let leaseFrom = now();
    let over = false;
    // Aborted when the holder releases: grants still coming in for it are then stale.
    const stale = new AbortController();
    const events: Event[] = [];
    let wake: () => void = () => {};
    const push = (e: Event): void => {
      events.push(e);
      wake();
    };
    const left = (): number => Math.max(1, Math.floor(deadline - now()));
    const releaseRound = (round: number, on: number[]): void => shared.spawn(shared.release(resource, roundOwner(base, round), on));

    const waitOn = (node: number, round: number): void => {
      const owner = roundOwner(base, round);
      const wait = ["DLOCK.ACQUIRE", resource, owner, String(ttl), "WAIT", String(left())];
      if (ticket !== undefined) wait.push("TICKET", ticket.toString());
      wait.push(...kindArgs(kind));
      const blocking = left() + TIMEOUT_RESOLUTION;
      const call = shared.call(node, wait, { acked: true, blocking }).then(({ reply, failure }): void => {
        const token = reply === undefined || reply === null ? undefined : tokenOf(reply);
        if (token !== undefined) {
          if (over) {
            // After the attempt: a grant for nobody (or for a holder that released) is released at once.
            if (!machine.held() || stale.signal.aborted || machine.round !== round) releaseRound(round, [node]);
            else stale.signal.addEventListener("abort", () => releaseRound(round, [node]), { once: true });
            return;
          }
          push({ event: "granted", node, round, token });
          return;
        }
        if (over) return;
        if (failure && isWrongKind(failure)) wrongKind = failure;
        if (round === machine.round) why[node] = failure ?? "timed_out";
        push({ event: "unavailable", node, round });
        // A node that could not be reached is asked again after the pause while the round lasts.
        if (failure && !isWrongKind(failure)) {
          setTimeout(() => {
            if (!over && machine.round === round && now() < deadline) waitOn(node, round);
          }, shared.retryPause());
        }
      });
      shared.spawn(call);
    };
    const fenceOn = (node: number, round: number, token: bigint): void => {
      const args = ["DLOCK.FENCE", resource, roundOwner(base, round), token.toString(), "PX", String(ttl)];
      shared.spawn(shared.call(node, args, { acked: true }).then(({ reply }) => push({ event: "fenced", node, round, committed: isOne(reply) })));
    };
    const failure = (): AttemptError => {
      if (wrongKind) return { type: "wrong_kind", failure: wrongKind };
      const failures = why.filter((w): w is NodeFailure => typeof w === "object");
      if (nodes - failures.length >= shared.needed(kind)) return { type: "contended" };
      return { type: "no_quorum", failures };
    };
    const end = async (error: AttemptError): Promise<Attempt> => {
      over = true;
      await shared.release(resource, roundOwner(base, machine.round));
      return { ok: false, error };
    };

    // An attempt gets at least one whole call, so a zero wait still asks once and hears the answer.
    const endAt = Math.max(deadline, now() + shared.opts.timeout);
    const timeout = setTimeout(() => wake(), endAt - now());
    const onAbort = (): void => wake();
    signal?.addEventListener("abort", onAbort);
    try {
      let steps: Step[] = first;
      for (;;) {
        for (const step of steps) {
          switch (step.step) {
            case "wait":
              leaseFrom = now();
              why.fill(undefined);
              step.nodes.forEach((n) => waitOn(n, step.round));
              break;
            case "fence":
              leaseFrom = now();
              step.nodes.forEach((n) => fenceOn(n, step.round, step.token));
              break;
            case "release":
              releaseRound(step.round, step.nodes);
              break;
            case "held":
              over = true;
              return await this.#lease(base, machine.round, step.token, ttl, leaseFrom, resource, stale);
            case "failed":
              return await end(failure());
          }
        }
        steps = [];
        if (wrongKind) return await end(failure());
        const next = events.shift();
        if (next) {
          steps = machine.on(next);
          continue;
        }
        if (signal?.aborted) return await end({ type: "contended" });
        if (now() >= endAt) return await end(failure());
        await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      clearTimeout(timeout);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Held: the validity left, counted from the request that last set the TTL. With one node that
   * is the wait itself, whose grant may have come long after it was sent: then the TTL is renewed
   * once, and validity counts from the renewal.
   */
  async #lease(base: string, round: number, token: bigint, ttl: number, leaseFrom: number, resource: string, stale: AbortController): Promise<Attempt> {
    const shared = this.#shared;
    const owner = roundOwner(base, round);
    const left = shared.validity(ttl, leaseFrom);
    if (left !== undefined && (left * 2 >= ttl || shared.nodes.length > 1)) {
      return { ok: true, granted: { owner, token, validity: left, stale } };
    }
    if (shared.nodes.length === 1) {
      const renewedFrom = now();
      const { reply } = await shared.call(0, ["DLOCK.EXTEND", resource, owner, String(ttl)], { acked: true });
      const renewed = shared.validity(ttl, renewedFrom);
      if (isOne(reply) && renewed !== undefined) return { ok: true, granted: { owner, token, validity: renewed, stale } };
    }
    stale.abort();
    shared.spawn(shared.release(resource, owner));
    return { ok: false, error: { type: "expired" } };
  }
}

/** A held lock: its fencing token, owner and validity; extend() and release(). */
export class Lock {
  readonly token: bigint;
  readonly owner: string;
  #validUntil: number;
  #released = false;
  #lost = false;
  readonly #controller = new AbortController();
  readonly #stale: AbortController | undefined;

  /** @internal */
  constructor(
    private readonly shared: Shared,
    readonly resource: string,
    readonly kind: Kind,
    readonly ttl: number,
    granted: Granted,
  ) {
    this.token = granted.token;
    this.owner = granted.owner;
    this.#validUntil = now() + granted.validity;
    this.#stale = granted.stale;
  }

  /** Milliseconds the lock is still safe to use (0 once expired). */
  get validity(): number {
    return Math.max(0, this.#validUntil - now());
  }

  /** Aborted when the lock is lost (a watchdog extension failed) or maxHold passed. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get lost(): boolean {
    return this.#lost;
  }

  /** EXTEND on every node: the lock's validity starts afresh from `ttl` ms (default: the ttl it was taken with). */
  async extend(ttl: number = this.ttl): Promise<number> {
    const whole = Math.floor(checkMs(ttl, "ttl", { min: 1 })!);
    if (this.#released) throw new LockLostError(this.resource);
    const needed = this.shared.needed(this.kind);
    const started = now();
    const outcomes = await Promise.all(
      this.shared.everywhere().map((n) => this.shared.call(n, ["DLOCK.EXTEND", this.resource, this.owner, String(whole)], { acked: true })),
    );
    const t = tally(outcomes);
    const left = this.shared.validity(whole, started);
    if (left !== undefined && t.done >= needed) {
      this.#validUntil = now() + left;
      return left;
    }
    if (t.done + t.refused < needed) throw new NoQuorumError(this.resource, needed, t.unreachable);
    throw new LockLostError(this.resource);
  }

  /** RELEASE on every node (a second call does nothing). */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    this.#stale?.abort();
    const needed = this.shared.needed(this.kind);
    const t = await this.shared.release(this.resource, this.owner);
    if (t.done + t.refused < needed) throw new NoQuorumError(this.resource, needed, t.unreachable);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** @internal The watchdog of `using`: extends every `interval` ms; the stop function. */
  watch(interval: number, maxHold: number | undefined): () => void {
    const started = now();
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const lose = (reason: Error): void => {
      this.#lost = true;
      stopped = true;
      if (!this.#controller.signal.aborted) this.#controller.abort(reason);
    };
    const tick = async (): Promise<void> => {
      if (stopped) return;
      if (maxHold !== undefined && now() - started >= maxHold) {
        stopped = true;
        this.#controller.abort(new LockLostError(this.resource));
        return;
      }
      try {
        await this.extend();
      } catch (e) {
        if (stopped) return; // stopped meanwhile: released, or about to be
        if (e instanceof LockLostError || this.validity <= 0) {
          lose(e instanceof Error ? e : new LockLostError(this.resource));
          return;
        }
      }
      if (!stopped) timer = setTimeout(() => void tick(), interval);
    };
    timer = setTimeout(() => void tick(), interval);
    let capTimer: NodeJS.Timeout | undefined;
    if (maxHold !== undefined) capTimer = setTimeout(() => void tick(), maxHold);
    return () => {
      stopped = true;
      clearTimeout(timer);
      clearTimeout(capTimer);
    };
  }
}
