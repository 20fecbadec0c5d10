/**
 * Takes a lock over the network (client/src/driver.rs): runs attempts (attempt.ts, every
 * decision) by sending what their actions ask through the node calls (calls.ts), feeding the
 * replies back, and keeping the time.
 *
 * - acquire without `wait` is one attempt that does not wait on the nodes; with `wait`, attempts
 *   run until one holds or `anotherAttempt` says stop: queued on the nodes (the default), or
 *   without a server wait and with the retry pause between attempts (waitMode "retry").
 * - An attempt that does not wait on the nodes, on several nodes with fencing on, holds without
 *   committing: its token's commit is owed (commit.ts) and paid when the lock's token is first
 *   read (lock.ts); `Granted` carries the nodes that granted for it.
 * - Queue mode draws one ticket per acquire (wall-clock us); with one node no ticket (plain
 *   FIFO, and a grant that is never committed must not be revocable).
 * - Round r of an attempt asks as owner `<base>:<r>`, each attempt under a new base, so a late
 *   RELEASE of an abandoned round cannot free a later one. A campaign appends ` <value>` (its
 *   label): the value then travels with every grant (docs/election.md).
 * - A queued attempt keeps the deadline itself (a node notices a wait's timeout only at its next
 *   tick) and gets at least one whole call, so a zero wait still asks once and hears the answer.
 * - An attempt that ends without the lock (or aborted by the signal) withdraws its round before
 *   answering; requests still out end in the background, where `onLate` says which grants they
 *   bring to release.
 */
import { type Action, Attempt, type AttemptError, type Policy, type Reply, anotherAttempt, lease } from "./attempt.js";
import type { NodeFailure } from "./errors.js";
import type { Calls } from "./calls.js";
import { owed } from "./commit.js";
import { drawTicket, later, newOwner, now, roundOwner } from "./timing.js";

/**
 * A lock won: its owner, token (the largest grant) and validity (ms), the controller to abort on
 * release, the nodes that granted it, and whether its token still owes its commit (commit.ts).
 */
export type Granted = {
  readonly owner: string;
  readonly token: bigint;
  readonly validity: number;
  readonly stale: AbortController;
  readonly holding: readonly number[];
  readonly owed: boolean;
};
export type Outcome = { ok: true; granted: Granted } | { ok: false; error: AttemptError; attempts: number };

type Input =
  | { readonly input: "reply"; readonly node: number; readonly round: number; readonly reply: Reply }
  | { readonly input: "fenced"; readonly node: number; readonly round: number; readonly failure: NodeFailure | undefined }
  | { readonly input: "pause"; readonly node: number; readonly round: number };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One acquire call. */
export class Acquire {
  readonly #ticket: bigint | undefined;
  /**
   * Nodes whose connection setup met a refusal waiting cannot cure (NodeFailure.refused): not
   * connected to again within this call, their refusal the answer to every ask.
   */
  readonly refused = new Map<number, NodeFailure>();

  constructor(
    readonly calls: Calls,
    readonly ttl: number,
    readonly deadline: number,
    readonly policy: Policy,
    readonly signal: AbortSignal | undefined,
    /** Appended to every round's owner: empty, or ` <value>` for a campaign (see `labelled`). */
    readonly label = "",
  ) {
    this.#ticket = policy.queue && calls.backend.nodes.length > 1 ? drawTicket() : undefined;
  }

  /** A campaign's label: ` <value>`, or nothing for an empty value. */
  static labelled(value: string): string {
    return value === "" ? "" : ` ${value}`;
  }

  get ticket(): bigint | undefined {
    return this.#ticket;
  }

  /**
   * Attempts until one holds (at most one when `once`), or why not and how many were made. A
   * RangeError once two nodes turn out to reach one server (transport/identity.ts): before any node
   * is asked, or found meanwhile, whatever the nodes said (a lock won is given back).
   */
  async run(once: boolean): Promise<Outcome> {
    const backend = this.calls.backend;
    const opts = backend.opts;
    this.#refuse();
    for (let attempts = 1; ; attempts++) {
      const result = await new Running(this, newOwner()).run();
      if (result.ok) {
        await backend.nodes.meetAll(backend.opts.timeout); // a manager's first lock only
        if (backend.nodes.refusal !== undefined) {
          result.granted.stale.abort();
          await this.calls.release(result.granted.owner, this.reachable());
        }
        this.#refuse();
        return result;
      }
      this.#refuse(); // no other attempt can change it
      const pause = this.calls.backend.retryPause();
      const outOfTime = now() + pause > this.deadline;
      if (once || this.signal?.aborted || !anotherAttempt(this.policy, result.error, outOfTime, attempts, opts.retryCount)) {
        return { ok: false, error: result.error, attempts };
      }
      await sleep(pause);
    }
  }

  /** Every node but those refused for the call (nothing of the call is on them). */
  reachable(): number[] {
    return this.calls.backend.nodes.everywhere().filter((n) => !this.refused.has(n));
  }

  /** A RangeError (a bad node list) once two nodes turned out to reach one server. */
  #refuse(): void {
    const refusal = this.calls.backend.nodes.refusal;
    if (refusal !== undefined) throw new RangeError(refusal);
  }

  /**
   * Held on `holding`: what the lease comes to (attempt.ts lease), counted from the request that
   * last set the TTL.
   */
  async lease(owner: string, token: bigint, leaseFrom: number, stale: AbortController, holding: readonly number[]): Promise<Granted | undefined> {
    const backend = this.calls.backend;
    const nodes = backend.nodes.length;
    let left = backend.validity(this.ttl, leaseFrom);
    let verdict = lease(nodes, left, this.ttl, false);
    if (verdict === "renew") {
      const renewedFrom = now();
      const renewed = await this.calls.renew(0, owner, this.ttl);
      left = renewed ? backend.validity(this.ttl, renewedFrom) : undefined;
      verdict = lease(nodes, left, this.ttl, true);
    }
    if (verdict === "held" && left !== undefined) {
      return { owner, token, validity: left, stale, holding, owed: owed(!this.policy.queue, nodes, backend.opts.fencing) };
    }
    stale.abort();
    await this.calls.release(owner, this.reachable()); // before answering, as any failure before the deadline
    return undefined;
  }
}

/** One attempt while its requests are out. */
class Running {
  readonly #core: Attempt;
  #actions: Action[];
  readonly #inputs: Input[] = [];
  #out = 0; // requests and pauses not back yet
  #wake: () => void = () => {};
  #over = false;
  #leaseFrom = now();
  readonly #stale = new AbortController(); // aborted when the holder releases

  constructor(
    readonly acquire: Acquire,
    readonly base: string,
  ) {
    const nodes = acquire.calls.backend.nodes.length;
    [this.#core, this.#actions] = Attempt.start(nodes, acquire.calls.backend.needed(acquire.calls.kind), acquire.policy);
  }

  async run(): Promise<{ ok: true; granted: Granted } | { ok: false; error: AttemptError }> {
    const a = this.acquire;
    // A queued attempt gets at least one whole call, so a zero wait still asks once and hears the answer.
    const endAt = Math.max(a.deadline, now() + a.calls.backend.opts.timeout);
    const cancelTimer = later(() => this.#wake(), endAt - now()); // years, maybe: no bare setTimeout
    const onAbort = (): void => this.#wake();
    a.signal?.addEventListener("abort", onAbort);
    try {
      for (;;) {
        const end = await this.#perform(this.#actions);
        if (end) return end;
        this.#actions = await this.#next(a.policy.queue ? endAt : undefined);
      }
    } finally {
      this.#over = true;
      cancelTimer();
      a.signal?.removeEventListener("abort", onAbort);
      // Replies that came in and were not fed (during the withdrawal of the round, say) go to
      // onLate, as later ones do: a grant among them is released.
      for (const input of this.#inputs.splice(0)) this.#late(input);
    }
  }

  #owner(round: number): string {
    return roundOwner(this.base, round, this.acquire.label);
  }

  /** Does what `actions` ask; the attempt's end, if one of them is it. */
  async #perform(actions: Action[]): Promise<{ ok: true; granted: Granted } | { ok: false; error: AttemptError } | undefined> {
    const calls = this.acquire.calls;
    const failing = actions.some((a) => a.action === "failed"); // then the round is withdrawn before answering
    for (const action of actions) {
      switch (action.action) {
        case "ask":
          this.#leaseFrom = now();
          action.nodes.forEach((n) => this.#ask(n, action.round));
          break;
        case "ask_again":
          if (action.afterPause) this.#pause(action.node, action.round);
          else this.#ask(action.node, action.round);
          break;
        case "fence":
          if (this.acquire.policy.queue) this.#leaseFrom = now(); // FENCE ... PX starts the lease afresh
          action.nodes.forEach((n) => this.#fence(n, action.round, action.token));
          break;
        case "release": {
          const release = calls.release(this.#owner(action.round), action.nodes.filter((n) => !this.acquire.refused.has(n)));
          if (failing) await release;
          else calls.backend.spawn(release);
          break;
        }
        case "held": {
          this.#over = true;
          const granted = await this.acquire.lease(this.#owner(action.round), action.token, this.#leaseFrom, this.#stale, this.#core.holding());
          return granted ? { ok: true, granted } : { ok: false, error: { type: "expired" } };
        }
        case "failed":
          this.#over = true; // the core withdrew the round just before
          return { ok: false, error: this.#told(action.error) };
      }
    }
    return undefined;
  }

  /**
   * An attempt ended by refusals for the call, with the failures of the replies in hand but not
   * fed yet added, so the error names every node known to have failed.
   */
  #told(error: AttemptError): AttemptError {
    if (error.type !== "no_quorum" || !error.final) return error;
    const names = this.acquire.calls.backend.nodes.names();
    const known = new Set(error.failures.map((f) => f.node));
    for (const input of this.#inputs) {
      if (input.input !== "reply" || input.reply === null || typeof input.reply === "bigint" || known.has(input.reply.node)) continue;
      error.failures.push(input.reply);
      known.add(input.reply.node);
    }
    error.failures.sort((x, y) => names.indexOf(x.node) - names.indexOf(y.node));
    return error;
  }

  /** Hands a request's answer to the attempt, or, once it is over, to `onLate`. */
  #track(request: Promise<Input>): void {
    this.#out += 1;
    const handled = request.then((input) => {
      this.#out -= 1;
      if (!this.#over) {
        this.#inputs.push(input);
        this.#wake();
        return;
      }
      this.#late(input);
    });
    this.acquire.calls.backend.spawn(handled);
  }

  /** An input once the attempt is over: a grant it brings is released unless it is the holder's. */
  #late(input: Input): void {
    if (input.input !== "reply") return;
    for (const late of this.#core.onLate(input.node, input.round, input.reply, this.#stale.signal.aborted)) {
      if (late.action === "release") this.acquire.calls.backend.spawn(this.acquire.calls.release(this.#owner(late.round), late.nodes));
    }
  }

  /** ACQUIRE (with WAIT ... [TICKET] in queue mode) on `node` as the owner of `round`. */
  #ask(node: number, round: number): void {
    const a = this.acquire;
    const refused = a.refused.get(node);
    if (refused !== undefined) {
      this.#track(Promise.resolve({ input: "reply" as const, node, round, reply: refused }));
      return;
    }
    const wait = a.policy.queue ? ([Math.max(1, a.deadline - now()), a.ticket] as const) : undefined;
    this.#track(a.calls.ask(node, this.#owner(round), a.ttl, wait).then((reply) => ({ input: "reply" as const, node, round, reply })));
  }

  #pause(node: number, round: number): void {
    this.#track(sleep(this.acquire.calls.backend.retryPause()).then(() => ({ input: "pause" as const, node, round })));
  }

  /** FENCE (with PX ttl in queue mode) on `node`. */
  #fence(node: number, round: number, token: bigint): void {
    const a = this.acquire;
    const ttl = a.policy.queue ? a.ttl : undefined;
    this.#track(a.calls.fence(node, this.#owner(round), token, ttl).then((failure) => ({ input: "fenced" as const, node, round, failure })));
  }

  /** The next input into the core; waits for one, the end, or the signal if none is in. */
  async #next(endAt: number | undefined): Promise<Action[]> {
    for (;;) {
      const input = this.#inputs.shift();
      if (input) return this.#feed(input);
      if (this.acquire.signal?.aborted || this.#out === 0) return this.#core.onDeadline();
      if (endAt !== undefined && now() >= endAt) return this.#core.onDeadline();
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  #feed(input: Input): Action[] {
    const a = this.acquire;
    if (a.calls.backend.nodes.refusal !== undefined) {
      // Two nodes reach one server: no reply counts, a grant brought is given back, and the
      // round is withdrawn everywhere, as at the deadline.
      const late = input.input === "reply" ? this.#core.onLate(input.node, input.round, input.reply, false) : [];
      return [...late, ...this.#core.onDeadline()];
    }
    if (input.input === "reply" && input.reply !== null && typeof input.reply === "object" && input.reply.refused !== undefined) {
      a.refused.set(input.node, input.reply);
    }
    if (input.input === "reply") return this.#core.onReply(input.node, input.round, input.reply, now() >= a.deadline);
    if (input.input === "fenced") {
      const valid = a.calls.backend.validity(a.ttl, this.#leaseFrom) !== undefined;
      return this.#core.onFenced(input.node, input.round, input.failure, valid);
    }
    return this.#core.onPauseOver(input.node, input.round);
  }
}
