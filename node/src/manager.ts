/**
 * LockManager: the Redlock rounds with two-phase quorum fencing (docs/protocol.md §3-§4),
 * queue-mode waiting with tickets (§5, the machine of acquisition.ts), shared holds and semaphore
 * permits with their quorum (docs/shared.md); the held Lock is lock.ts, the options settings.ts. Same defaults and meaning as the Rust and Python
 * clients; durations in milliseconds.
 */
import { Acquisition, type Event, type Step } from "./acquisition.js";
import { LockContendedError, LockLostError, NoQuorumError, NodeError, ValidityExpiredError, WrongKindError, isWrongKind, type NodeFailure } from "./errors.js";
import { RedisNode } from "./node.js";
import { ClusterNode } from "./cluster.js";
import { SentinelNode } from "./sentinel.js";
import { type Kind, drawTicket, kindArgs, newOwner, now, roundOwner, validity } from "./timing.js";
import { parseNode } from "./urls.js";
import { type AttemptError, type Vote, commitVerdict, countVotes, nodesWorthAskingAgain, quorumToken } from "./verdicts.js";
import { Lock } from "./lock.js";
import { type AcquireOptions, type LockManagerOptions, checkKind, checkMs, settings, TIMEOUT_RESOLUTION } from "./settings.js";
import { type Attempt, Shared, isOne, sleep, tokenOf } from "./shared.js";
export { Lock } from "./lock.js";
export type { AcquireOptions, LockManagerOptions } from "./settings.js";

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

