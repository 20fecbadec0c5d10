/**
 * One attempt to take a lock, free of I/O (client/src/attempt.rs, ported): the acquisition
 * machine (acquisition.ts) and every decision the driver takes around it. Replies go in, actions
 * come out; driver.ts does the sending, the timers and the background work.
 * conformance/attempts.json (with replies.json, leases.json, retries.json) pins each decision
 * for the three clients.
 *
 * - How a reply counts (`classify`): a grant; busy, the lock held by others (nil, or a queued
 *   wait that ran past the deadline unanswered: a server notices a wait's timeout only at its
 *   next tick, so the client's own time for the call may run out first); a node failure; or the
 *   kind refused (WRONGKIND), or an argument refused (ERR ... must be ...): the attempt ends,
 *   asking again cannot change it.
 * - A node whose connection setup met a refusal waiting cannot cure (NodeFailure.refused
 *   "setup": credentials or permission refused) is not asked again; once such nodes leave a
 *   quorum out of reach the attempt ends, and no other follows. A database the server does not
 *   have ("database") is an argument refused.
 * - Asking again: a failed node is asked again; a queued wait after the retry pause while its
 *   round lasts (the machine counts the node out meanwhile), a plain ACQUIRE at once, once per
 *   round, while a quorum has not granted yet (its failure counts only if the repeat fails too).
 * - Once held, requests still out stay out: a grant they bring is the holder's and goes with the
 *   holder's RELEASE; a grant of an earlier round, of an attempt that did not hold, or that comes
 *   after the holder released is released at once (`onLate`).
 * - Why it failed (AttemptError): too many failed nodes for a quorum is no quorum; a one-round
 *   commit that missed is no quorum, or expired once validity ran out; otherwise contended.
 * - The lease (`lease`) and another attempt (`anotherAttempt`).
 */
import { Acquisition, type Event, type Step } from "./acquisition.js";
import { type NodeFailure, isRefusedArgument, isWrongKind } from "./errors.js";

/**
 * How an attempt asks the nodes: queued on them (ACQUIRE ... WAIT, round after round until the
 * deadline, the commit starting the lease afresh), or one plain ACQUIRE per node in one round
 * (acquire without `wait`, retry mode; `commit` off only with fencing off).
 */
export interface Policy {
  readonly queue: boolean;
  readonly commit: boolean;
}

export const QUEUE: Policy = { queue: true, commit: true };

/** A node's answer to an ask: its token, null (nil), or why there is none. */
export type Reply = bigint | null | NodeFailure;

/** How a reply counts. */
export type Outcome =
  | { readonly type: "granted"; readonly token: bigint }
  | { readonly type: "busy" }
  | { readonly type: "failed"; readonly failure: NodeFailure }
  | { readonly type: "wrong_kind"; readonly failure: NodeFailure }
  | { readonly type: "invalid"; readonly failure: NodeFailure };

/** Why one attempt failed; the caller retries or turns it into an error. */
export type AttemptError =
  | { readonly type: "contended" }
  /** `final`: nodes refused for the call (NodeFailure.refused) left a quorum out of reach: no other attempt. */
  | { readonly type: "no_quorum"; readonly failures: NodeFailure[]; readonly final?: boolean }
  | { readonly type: "wrong_kind"; readonly failure: NodeFailure }
  | { readonly type: "invalid"; readonly failure: NodeFailure }
  | { readonly type: "expired" };

export type Action =
  /** Ask `nodes` as the owner of `round`: a new round, whose lease counts from here. */
  | { readonly action: "ask"; readonly round: number; readonly nodes: number[] }
  /** Ask `node` again: at once, or after the retry pause (then `onPauseOver` says whether it still goes). */
  | { readonly action: "ask_again"; readonly node: number; readonly round: number; readonly afterPause: boolean }
  | { readonly action: "fence"; readonly round: number; readonly token: bigint; readonly nodes: number[] }
  | { readonly action: "release"; readonly round: number; readonly nodes: number[] }
  | { readonly action: "held"; readonly round: number; readonly token: bigint }
  | { readonly action: "failed"; readonly error: AttemptError };

/** How a reply to an ask counts, given the policy and whether the acquire's deadline had passed. */
export function classify(reply: Reply, policy: Policy, pastDeadline: boolean): Outcome {
  if (typeof reply === "bigint") return { type: "granted", token: reply };
  if (reply === null) return { type: "busy" };
  if (reply.refused === "database") return { type: "invalid", failure: reply };
  if (isWrongKind(reply)) return { type: "wrong_kind", failure: reply };
  if (isRefusedArgument(reply)) return { type: "invalid", failure: reply };
  if (reply.noReply && policy.queue && pastDeadline) return { type: "busy" };
  return { type: "failed", failure: reply };
}

/**
 * What a held lock comes to, given the validity `left` (ms) counted from the request that last
 * set its TTL: "held"; "renew" (one node, whose grant may have come long after the wait was
 * sent: renew the TTL once and count from the renewal); or "expired".
 */
export function lease(nodes: number, left: number | undefined, ttl: number, renewed: boolean): "held" | "renew" | "expired" {
  if (nodes === 1 && !renewed && (left === undefined || left * 2 < ttl)) return "renew";
  return left !== undefined ? "held" : "expired";
}

/**
 * Whether a failed attempt is followed by another (after the retry pause): not when the kind or an
 * argument was refused, nor when nodes refused for the call left a quorum out of reach, nor when a queued attempt was contended (it waited to the deadline), nor out of time
 * (the pause would end past the deadline) or of retries.
 */
export function anotherAttempt(policy: Policy, error: AttemptError, outOfTime: boolean, attempts: number, retryCount: number): boolean {
  if (error.type === "wrong_kind" || error.type === "invalid" || (error.type === "contended" && policy.queue)) return false;
  if (error.type === "no_quorum" && error.final) return false;
  return !outOfTime && attempts <= retryCount;
}

/** One attempt: the machine, and what the driver needs to know of this round. */
export class Attempt {
  readonly #machine: Acquisition;
  #outcomes: Array<Outcome | undefined>; // this round, each node's last answer
  #askedAgain: boolean[]; // this round, asked again at once
  #uncommitted: NodeFailure[] = []; // this round's commit: who did not, and why
  #heldRound: number | undefined;
  readonly #final = new Set<number>(); // nodes whose connection setup met a refusal (NodeFailure.refused)

  private constructor(
    readonly nodes: number,
    readonly policy: Policy,
    machine: Acquisition,
  ) {
    this.#machine = machine;
    this.#outcomes = new Array<Outcome | undefined>(nodes).fill(undefined);
    this.#askedAgain = new Array<boolean>(nodes).fill(false);
  }

  /** Round 0 of an attempt held once `needed` of `nodes` nodes committed. */
  static start(nodes: number, needed: number, policy: Policy): [Attempt, Action[]] {
    const [machine, steps] = policy.queue ? Acquisition.start(nodes, needed) : Acquisition.startOnce(nodes, needed, policy.commit);
    const attempt = new Attempt(nodes, policy, machine);
    return [attempt, attempt.#act(steps, true)];
  }

  get round(): number {
    return this.#machine.round;
  }

  /** The nodes that granted this round: once held, the nodes the hold is on (a commit owed goes to them). */
  holding(): number[] {
    return this.#machine.grantedNodes();
  }

  isOver(): boolean {
    return this.#machine.isOver();
  }

  /** `node`'s reply to its ask of `round`. */
  onReply(node: number, round: number, reply: Reply, pastDeadline: boolean): Action[] {
    if (this.isOver()) return this.onLate(node, round, reply, false);
    const outcome = classify(reply, this.policy, pastDeadline);
    const event: Event = outcome.type === "granted" ? { event: "granted", node, round, token: outcome.token } : { event: "unavailable", node, round };
    if (round !== this.round || node >= this.nodes) return this.#act(this.#machine.on(event), true); // a stale grant is released
    if (outcome.type === "wrong_kind" || outcome.type === "invalid") return this.#giveUp({ type: outcome.type, failure: outcome.failure });
    this.#outcomes[node] = outcome;
    if (outcome.type === "failed" && outcome.failure.refused === "setup") return this.#refusedForGood(node, event);
    const failed = outcome.type === "failed";
    if (failed && this.#askAtOnce(node)) return [{ action: "ask_again", node, round, afterPause: false }]; // the repeat counts instead
    const actions = this.#act(this.#machine.on(event), true);
    if (failed && this.policy.queue && !this.isOver()) actions.push({ action: "ask_again", node, round, afterPause: true });
    return actions;
  }

  /**
   * A node whose connection setup met a refusal waiting cannot cure: never asked again; once such
   * nodes leave a quorum out of reach, the call ends at once.
   */
  #refusedForGood(node: number, event: Event): Action[] {
    this.#final.add(node);
    if (this.nodes - this.#final.size < this.#machine.needed) {
      const failures = this.#outcomes.flatMap((o) => (o?.type === "failed" ? [o.failure] : []));
      return this.#giveUp({ type: "no_quorum", failures, final: true });
    }
    return this.#act(this.#machine.on(event), true);
  }

  /** A plain ACQUIRE that failed is repeated at once, once per round, unless a quorum granted without it. */
  #askAtOnce(node: number): boolean {
    if (this.policy.queue || this.#askedAgain[node] || this.#machine.grantedNodes().length >= this.#machine.needed) return false;
    this.#askedAgain[node] = true;
    return true;
  }

  /** The retry pause of an ask_again is over: the ask goes if its round still lasts. */
  onPauseOver(node: number, round: number): Action[] {
    if (this.isOver() || round !== this.round) return [];
    return [{ action: "ask_again", node, round, afterPause: false }];
  }

  /** `node`'s reply to the commit of `round`: committed (`failure` undefined) or why not; `valid`: validity is left now. */
  onFenced(node: number, round: number, failure: NodeFailure | undefined, valid: boolean): Action[] {
    if (failure !== undefined && round === this.round && !this.isOver()) this.#uncommitted.push(failure);
    return this.#act(this.#machine.on({ event: "fenced", node, round, committed: failure === undefined }), valid);
  }

  /** The attempt's time ran out (queued attempts only): its round is withdrawn. */
  onDeadline(): Action[] {
    return this.isOver() ? [] : this.#giveUp(this.#verdict(true));
  }

  /** A reply after the attempt ended, or after the holder released (`released`): a grant is released unless the holder's. */
  onLate(node: number, round: number, reply: Reply, released: boolean): Action[] {
    if (typeof reply !== "bigint") return [];
    if (this.#heldRound === round && !released) return []; // the holder's: its RELEASE frees it
    return [{ action: "release", round, nodes: [node] }];
  }

  /** Ends the attempt now: its round withdrawn everywhere. */
  #giveUp(error: AttemptError): Action[] {
    const releases: Action[] = this.#machine.abandon().flatMap((s) => (s.step === "release" ? [{ action: "release" as const, round: s.round, nodes: s.nodes }] : []));
    return [...releases, { action: "failed", error }];
  }

  /** The machine's steps as actions. */
  #act(steps: Step[], valid: boolean): Action[] {
    return steps.map((step): Action => {
      switch (step.step) {
        case "wait":
          this.#outcomes.fill(undefined);
          this.#askedAgain.fill(false);
          this.#uncommitted = [];
          return { action: "ask", round: step.round, nodes: step.nodes };
        case "fence":
          return { action: "fence", round: step.round, token: step.token, nodes: step.nodes };
        case "release":
          return { action: "release", round: step.round, nodes: step.nodes };
        case "held":
          this.#heldRound = this.round;
          return { action: "held", round: this.round, token: step.token };
        case "failed":
          return { action: "failed", error: this.#verdict(valid) };
      }
    });
  }

  /** Why this round came to nothing (see the module's notes). */
  #verdict(valid: boolean): AttemptError {
    const failures = this.#outcomes.flatMap((o) => (o?.type === "failed" ? [o.failure] : []));
    if (this.#uncommitted.length > 0) return valid ? { type: "no_quorum", failures: [...failures, ...this.#uncommitted] } : { type: "expired" };
    if (this.nodes - failures.length < this.#machine.needed) return { type: "no_quorum", failures };
    return { type: "contended" };
  }
}
