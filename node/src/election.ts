/**
 * Leader election (docs/election.md, client/src/election.rs): a campaign is a queued exclusive lock
 * on the election's name whose owner carries the candidate's value (`<id> <value>`), so that the
 * fair queue, the handoff, replication and persistence carry the value with the grant; the
 * leader's epoch is its fencing token, rising with every leader. Leadership is kept by the
 * watchdog under the lease-loss contract (renewal.ts). Who leads is read (`leaderOf`) or followed
 * (electionWatch.ts) by the same rule, `leaderView`: one holder with one token on a quorum of the
 * nodes (conformance/leaders.json).
 */
import type { Backend } from "./backend.js";
import { Calls, tokenOf } from "./calls.js";
import { type NodeFailure, NoQuorumError, WrongKindError, isWrongKind } from "./errors.js";
import { EXCLUSIVE } from "./kind.js";
import type { DataClient, Lock } from "./lock.js";
import type { Reply } from "./transport/server.js";

/**
 * The longest value a candidate may carry, in UTF-8 bytes: the owner (at most 256 bytes on the
 * nodes) also holds the candidate's id, its round and a space.
 */
export const MAX_VALUE_LEN = 200;

/** Who leads an election. */
export interface Leader {
  /** The leader's candidate id (unique per campaign). */
  readonly id: string;
  /** The value it campaigned with or last proclaimed. */
  readonly value: string;
  /** Its epoch: the fencing token of its leadership, larger than every earlier leader's. */
  readonly epoch: bigint;
}

/** One node's holder of the election's lock: its owner and token, or null when free. */
export type Seen = { readonly owner: string; readonly token: bigint } | null;

/** An owner as [candidate id, value]: the value follows the first space. */
export function splitOwner(owner: string): [id: string, value: string] {
  const space = owner.indexOf(" ");
  return space < 0 ? [owner, ""] : [owner.slice(0, space), owner.slice(space + 1)];
}

/** Refuses a name or value the nodes would refuse (TypeError, RangeError), before any node is asked. */
export function check(name: unknown, value: unknown = ""): void {
  if (typeof name !== "string" || name === "") throw new TypeError("an election needs a name: a non-empty string");
  if (typeof value !== "string") throw new TypeError(`a leader's value must be a string, got ${typeof value}`);
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes > MAX_VALUE_LEN) throw new RangeError(`a leader's value is at most ${MAX_VALUE_LEN} bytes, got ${bytes}`);
}

type Holder = { readonly id: string; readonly value: string; readonly token: bigint };

/**
 * Who leads, from what each node holds (undefined: the node did not answer): the candidate
 * holding on `needed` nodes, whatever its tokens (its epoch the token it holds on `needed` nodes,
 * else the `previous` leader's while the same candidate still holds it somewhere, else its
 * smallest; its value the one it holds on `needed` nodes, else the `previous` leader's
 * while a proclamation spreads, else the first such node's); null when nobody does; undefined
 * when fewer than `needed` nodes answered (unknown).
 */
export function leaderView(nodes: ReadonlyArray<Seen | undefined>, needed: number, previous?: Leader | null): Leader | null | undefined {
  const answered = nodes.filter((n) => n !== undefined);
  if (answered.length < needed) return undefined;
  const holders: Holder[] = answered.flatMap((seen) => {
    if (seen === null) return [];
    const [id, value] = splitOwner(seen.owner);
    return [{ id, value, token: seen.token }];
  });
  const count = (f: (h: Holder) => boolean): number => holders.filter(f).length;
  const first = holders.find((h) => count((o) => o.id === h.id) >= needed);
  if (first === undefined) return null;
  const { id } = first;
  // The token held on `needed` nodes (the committed one), else the smallest: a node granted
  // late keeps its own larger token, so with committed nodes down the epoch is on fewer.
  const mine = holders.filter((h) => h.id === id);
  const committed = mine.find((h) => count((o) => o.id === id && o.token === h.token) >= needed);
  // A leadership's epoch never changes while it lasts: the one already seen is kept while a node
  // holds it (a resignation may release the epoch's nodes first).
  const kept = previous && previous.id === id && mine.some((h) => h.token === previous.epoch) ? previous.epoch : undefined;
  const smallest = mine.reduce((low, h) => (h.token < low ? h.token : low), first.token);
  const epoch = committed ? committed.token : (kept ?? smallest);
  const agreed = mine.find((h) => count((o) => o.id === id && o.value === h.value) >= needed);
  let value = first.value;
  if (agreed) value = agreed.value;
  else if (previous && previous.id === id && previous.epoch === epoch) value = previous.value;
  return { id, value, epoch };
}

/** Two views of who leads (a Leader, null: nobody, undefined: unknown) say the same. */
export function sameView(a: Leader | null | undefined, b: Leader | null | undefined): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return a.id === b.id && a.value === b.value && a.epoch === b.epoch;
}

/**
 * A node's holder from a DLOCK.STATUS or DLOCK.OBSERVE reply: nil when free, else the fields
 * `owner` and `token` as name/value pairs. A shared lock or a semaphore (a `kind` field) is not an
 * election: a failure that reads as WRONGKIND (errors.ts isWrongKind), as a malformed reply is one.
 */
export function holder(node: string, reply: Reply | undefined): Seen | NodeFailure {
  if (reply === null || reply === undefined) return null;
  if (!Array.isArray(reply)) return { node, reason: `unexpected reply ${JSON.stringify(reply)}` };
  let owner: string | undefined;
  let token: bigint | undefined;
  for (let i = 0; i + 1 < reply.length; i += 2) {
    const [field, value] = [reply[i], reply[i + 1]!];
    if (field === "kind") return { node, reason: "WRONGKIND held as a shared lock or semaphore, not an election" };
    if (field === "owner" && typeof value === "string") owner = value;
    if (field === "token") token = tokenOf(value);
  }
  if (owner === undefined || token === undefined) return { node, reason: "a reply without owner and token" };
  return { owner, token };
}

/** What `work` rejected with, or undefined when it resolved. */
const failure = (work: Promise<unknown>): Promise<unknown> =>
  work.then(
    () => undefined,
    (e: unknown) => e,
  );

export const isFailure = (got: Seen | NodeFailure): got is NodeFailure => got !== null && "reason" in got;

/** Who leads `name` now, read from every node (DLOCK.STATUS): null when nobody; NoQuorumError when too few answered to tell. */
export async function leaderOf(backend: Backend, name: string): Promise<Leader | null> {
  const needed = backend.needed(EXCLUSIVE);
  const failures: NodeFailure[] = [];
  const replies = await new Calls(backend, name, EXCLUSIVE).status();
  const seen = replies.map((outcome, node) => {
    const got = outcome.failure ?? holder(backend.nodes.name(node), outcome.reply);
    if (!isFailure(got)) return got;
    if (isWrongKind(got)) throw new WrongKindError(name, got.node, got.reason);
    failures.push(got);
    return undefined;
  });
  const view = leaderView(seen, needed);
  if (view === undefined) throw new NoQuorumError(name, needed, failures);
  return view;
}

/**
 * Leadership won by `LockManager.campaign`: its epoch, value and id, and the loss signal, kept by
 * a watchdog. `resign()` hands it to the next candidate at once (`await using` resigns too).
 */
export class Leadership implements AsyncDisposable {
  readonly #lock: Lock;
  readonly #epoch: bigint;
  #value: string;
  #stop: () => void;

  /** @internal `epoch`: the lock's token, read (committed) before leadership is reported. */
  constructor(
    lock: Lock,
    value: string,
    epoch: bigint,
    private readonly watch: () => () => void,
  ) {
    this.#lock = lock;
    this.#epoch = epoch;
    this.#value = value;
    this.#stop = watch();
  }

  /** The election's name. */
  get name(): string {
    return this.#lock.resource;
  }

  /**
   * This leadership's fencing token, larger than every earlier leader's: pass it to the resources
   * it writes to. Committed on a quorum before `campaign` resolved, so read at once.
   */
  get epoch(): bigint {
    return this.#epoch;
  }

  /** The value observers read. */
  get value(): string {
    return this.#value;
  }

  /** The candidate id observers see with the value. */
  get id(): string {
    return splitOwner(this.#lock.owner)[0];
  }

  /**
   * Aborted once, when leadership is lost: at its renew deadline without a confirmed extension, or
   * when the nodes refused one (docs/election.md, the lease-loss contract). Its reason is a LockLostError.
   */
  get signal(): AbortSignal {
    return this.#lock.signal;
  }

  /** True once leadership is known lost. */
  get lost(): boolean {
    return this.#lock.lost;
  }

  /** A write through a gate carrying the epoch (see `Lock.guarded`, docs/fencing.md): a newer leader's refuses it. */
  async guarded(client: DataClient, gate: string, command: string[]): Promise<unknown> {
    return this.#lock.guarded(client, gate, command);
  }

  /**
   * Changes the value observers read, keeping leadership and epoch (DLOCK.PROCLAIM on every node).
   * Rejects with NoQuorumError or LockLostError when a quorum did not take it (observers then read
   * the old value, or none); a bad value is a TypeError or RangeError before any node is asked.
   */
  async proclaim(value: string): Promise<void> {
    check(this.name, value);
    this.#stop(); // its extensions name the owner being renamed
    const failed = await failure(this.#lock.rename(value === "" ? this.id : `${this.id} ${value}`));
    if (failed === undefined) this.#value = value;
    // A fresh lease under the owner it now has; then the watchdog again, unless already lost.
    const renewed = await failure(this.#lock.extend());
    if (!this.#lock.lost) this.#stop = this.watch();
    if (failed !== undefined || renewed !== undefined) throw failed ?? renewed;
  }

  /**
   * Gives leadership up: the watchdog stops before the release is sent (no extension after it),
   * and the next candidate queued is granted at once. A second call does nothing.
   */
  async resign(): Promise<void> {
    this.#stop();
    await this.#lock.release();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.resign();
  }
}
