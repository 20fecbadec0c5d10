/**
 * Following an election (docs/election.md, client/src/election_watch.rs): each node is asked
 * `DLOCK.OBSERVE name AFTER token OWNER owner`, which the node answers when its holder differs from
 * the one named (or its lease ends), so nobody polls; each answer updates what that node holds, and
 * the leader (by `leaderView`) is queued for the reader each time it changes, in order.
 */
import { sleepUnless } from "./backend.js";
import type { Calls } from "./calls.js";
import { type Leader, type Seen, holder, isFailure, leaderView, sameView, splitOwner } from "./election.js";
import { type NodeFailure, NoQuorumError } from "./errors.js";
import { EXCLUSIVE } from "./kind.js";

/** How long one DLOCK.OBSERVE may block on a node before it is asked again (ms). */
const OBSERVE_FOR = 30_000;

/**
 * How long a new leader whose epoch no majority shows yet is held back (ms): a grant being
 * committed shows each node's own token for the moment its FENCE takes (a round trip), then the
 * epoch on a majority, so shown at once it would be two events (a smaller epoch, then the right
 * one) for one takeover; with committed nodes down it stays so, and is shown after this.
 */
const COMMIT_GRACE = 250;

/** Who leads: a leader, nobody (null), or unknown (undefined). */
type View = Leader | null | undefined;

/** One change: the leader, null when nobody leads, or a NoQuorumError when too few nodes answer to tell. */
export type Observed = Leader | null | NoQuorumError;

/**
 * Leader changes of one election, in order, as an async iterator: the leader first, then each
 * change (null: nobody leads; a NoQuorumError item when too few nodes answer, then the leader once
 * they do). Ends when `return()` is called (`break` out of `for await`), when the signal given to
 * `observe` aborts, or when the manager closes.
 */
export class Observer implements AsyncIterableIterator<Observed> {
  readonly #stop = new AbortController();
  readonly #changes: Observed[] = [];
  /** Readers waiting for a change (or the end). */
  #waiting: Array<() => void> = [];
  readonly #seen: Array<Seen | undefined>;
  readonly #failures: Array<NodeFailure | undefined>;
  readonly #heard: boolean[];
  /** The last view queued (undefined: unknown), or nothing yet. */
  #shown: { readonly view: View } | undefined;
  /** A new leader held back (COMMIT_GRACE), and the timer that shows it at its deadline. */
  #pending: { view: View; readonly timer: NodeJS.Timeout } | undefined;

  /** @internal */
  constructor(
    private readonly calls: Calls,
    stops: ReadonlyArray<AbortSignal | undefined>,
  ) {
    const nodes = calls.backend.nodes.length;
    this.#seen = new Array<Seen | undefined>(nodes).fill(undefined);
    this.#failures = new Array<NodeFailure | undefined>(nodes).fill(undefined);
    this.#heard = new Array<boolean>(nodes).fill(false);
    const stop = (): void => this.#stop.abort();
    for (const signal of stops) {
      if (signal?.aborted) stop();
      signal?.addEventListener("abort", stop, { once: true });
    }
    this.#stop.signal.addEventListener("abort", () => (this.#clearPending(), this.#wake()), { once: true });
    for (let node = 0; node < nodes; node++) void this.#watchNode(node).catch(() => undefined);
  }

  [Symbol.asyncIterator](): Observer {
    return this;
  }

  /** The next change, waiting for one; done once stopped. */
  async next(): Promise<IteratorResult<Observed, undefined>> {
    for (;;) {
      if (this.#stop.signal.aborted) return { done: true, value: undefined };
      const change = this.#changes.shift();
      if (change !== undefined) return { done: false, value: change };
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
  }

  /** Stops observing: every node's pending DLOCK.OBSERVE is cut (its connection closed). */
  async return(): Promise<IteratorResult<Observed, undefined>> {
    this.#stop.abort();
    return { done: true, value: undefined };
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const resolve of waiting) resolve();
  }

  /** Asks one node again and again, each time after the holder it last reported. */
  async #watchNode(node: number): Promise<void> {
    const name = this.calls.backend.nodes.name(node);
    let last: Seen | undefined; // undefined: nothing seen yet, or a failure: ask for the holder at once
    while (!this.#stop.signal.aborted) {
      const after = last === undefined ? undefined : last === null ? ([0n, ""] as const) : ([last.token, last.owner] as const);
      const outcome = await this.calls.observe(node, after, OBSERVE_FOR, this.#stop.signal);
      if (this.#stop.signal.aborted) return;
      const got = outcome.failure ?? holder(name, outcome.reply);
      this.#report(node, got);
      if (!isFailure(got)) last = got;
      else {
        last = undefined;
        await sleepUnless(this.calls.backend.retryPause(), [this.#stop.signal]);
      }
    }
  }

  /**
   * Keeps what `node` holds and queues the leader when it changed; a new leader whose epoch no
   * majority shows yet waits up to COMMIT_GRACE from when it first waited (its grant may still be
   * being committed), replaced by any newer view, dropped by a report with no news (as the Rust
   * observer, client/src/election_watch.rs `gather`).
   */
  #report(node: number, got: Seen | NodeFailure): void {
    const view = this.#news(node, got);
    if (view === "none") return this.#clearPending(); // back to what is shown
    if (this.#uncommitted(view)) {
      if (this.#pending) this.#pending.view = view; // the deadline stays
      else this.#pending = { view, timer: setTimeout(() => this.#showPending(), COMMIT_GRACE) };
      return;
    }
    this.#clearPending();
    this.#show(view);
  }

  /** Records a node's report; the view if it is news, "none" if not. */
  #news(node: number, got: Seen | NodeFailure): View | "none" {
    this.#heard[node] = true;
    this.#seen[node] = isFailure(got) ? undefined : got;
    this.#failures[node] = isFailure(got) ? got : undefined;
    const view = leaderView(this.#seen, this.#needed(), this.#shown?.view);
    // Until every node has said something, only a leader is news: a quorum of holders stands
    // whatever the others say, but "nobody" or "unknown" may just be the first answers (a node
    // holding a late grant under its own token, a node slower to answer).
    const undecided = !view && this.#heard.some((heard) => !heard);
    if (undecided || (this.#shown !== undefined && sameView(this.#shown.view, view))) return "none";
    return view;
  }

  /** A leader not shown before whose epoch (same id, same token) is on fewer nodes than a majority. */
  #uncommitted(view: View): boolean {
    if (!view || this.#shown?.view?.id === view.id) return false;
    const on = this.#seen.filter((s) => s && s.token === view.epoch && splitOwner(s.owner)[0] === view.id);
    return on.length < this.#needed();
  }

  #needed(): number {
    return this.calls.backend.needed(EXCLUSIVE);
  }

  #clearPending(): void {
    if (this.#pending) clearTimeout(this.#pending.timer);
    this.#pending = undefined;
  }

  /** At the grace's deadline: the view still held back is shown. */
  #showPending(): void {
    const pending = this.#pending;
    this.#pending = undefined;
    if (pending && !this.#stop.signal.aborted) this.#show(pending.view);
  }

  /** Queues `view` for the reader. */
  #show(view: View): void {
    this.#shown = { view };
    const failures = this.#failures.filter((f) => f !== undefined);
    this.#changes.push(view === undefined ? new NoQuorumError(this.calls.resource, this.#needed(), failures) : view);
    this.#wake();
  }
}
