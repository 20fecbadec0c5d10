/**
 * The calls to the nodes about one lock (client/src/calls.rs), the one set every path uses: an
 * attempt's asks, waits and commits (driver.ts), a lock's extensions, renewal and release
 * (lock.ts). Each reply is read here into what the caller decides on: an ask's token, nil or
 * failure, a commit's yes or why not, a Tally.
 */
import type { Reply as Answer } from "./attempt.js";
import type { Backend } from "./backend.js";
import * as cmd from "./commands.js";
import type { NodeFailure } from "./errors.js";
import type { Kind } from "./kind.js";
import { TIMEOUT_RESOLUTION } from "./options.js";
import { now } from "./timing.js";
import type { Outcome } from "./transport/nodes.js";
import type { Reply } from "./transport/server.js";

export const isOne = (reply: Reply | undefined): boolean => reply === "1";

/** A grant's token: a positive integer reply. */
export function tokenOf(reply: Reply): bigint | undefined {
  if (typeof reply === "string" && /^\d+$/.test(reply)) {
    const token = BigInt(reply);
    return token > 0n ? token : undefined;
  }
  return undefined;
}

/** What a request sent to several nodes (RELEASE, EXTEND) found. */
export interface Tally {
  done: number;
  refused: number;
  unreachable: NodeFailure[];
}

export function tally(outcomes: readonly Outcome[]): Tally {
  const t: Tally = { done: 0, refused: 0, unreachable: [] };
  for (const o of outcomes) {
    if (o.failure) t.unreachable.push(o.failure);
    else if (isOne(o.reply)) t.done += 1;
    else t.refused += 1;
  }
  return t;
}

export class Calls {
  /** The resource's name in errors (a set's: its keys joined by commas). */
  readonly resource: string;

  /** `target`: one resource, or a set (taken all or nothing with the *ALL commands, one token per node as a lock). */
  constructor(
    readonly backend: Backend,
    readonly target: cmd.Resource,
    readonly kind: Kind,
  ) {
    this.resource = cmd.nameOf(target);
  }

  /** DLOCK.ACQUIRE on `node` as `owner`: with `wait` ([ms left, ticket]) a server-side wait. */
  async ask(node: number, owner: string, ttl: number, wait?: readonly [number, bigint | undefined]): Promise<Answer> {
    const args = wait === undefined ? cmd.acquire(this.target, owner, ttl, this.kind) : cmd.wait(this.target, owner, ttl, Math.max(1, Math.floor(wait[0])), wait[1], this.kind);
    // A server notices a wait's timeout only at its next tick: its nil may come that late.
    const blocking = wait === undefined ? 0 : Math.max(1, Math.floor(wait[0])) + TIMEOUT_RESOLUTION;
    const { reply, failure } = await this.backend.nodes.call(node, args, { acked: true, blocking });
    if (failure) return failure;
    if (reply === null || reply === undefined) return null;
    return tokenOf(reply) ?? { node: this.backend.nodes.name(node), reason: `unexpected reply ${JSON.stringify(reply)}` };
  }

  /** DLOCK.FENCE of `token` as `owner` (with PX ttl when the commit starts the lease): undefined when committed, else why not. */
  async fence(node: number, owner: string, token: bigint, ttl?: number): Promise<NodeFailure | undefined> {
    const { reply, failure } = await this.backend.nodes.call(node, cmd.fence(this.target, owner, token, ttl), { acked: true });
    if (failure) return failure;
    return isOne(reply) ? undefined : { node: this.backend.nodes.name(node), reason: "fence refused: lock no longer held" };
  }

  /** DLOCK.EXTEND on one node (the renewal of a lock held on one node): whether it did. */
  async renew(node: number, owner: string, ttl: number): Promise<boolean> {
    return isOne((await this.backend.nodes.call(node, cmd.extend(this.target, owner, ttl), { acked: true })).reply);
  }

  /** DLOCK.EXTEND everywhere: the validity left (ms) if the kind's quorum extended within it, else the tally. */
  async extend(owner: string, ttl: number): Promise<number | Tally> {
    const started = now();
    const args = cmd.extend(this.target, owner, ttl);
    const t = tally(await Promise.all(this.backend.nodes.everywhere().map((n) => this.backend.nodes.call(n, args, { acked: true }))));
    const left = this.backend.validity(ttl, started);
    return left !== undefined && t.done >= this.backend.needed(this.kind) ? left : t;
  }

  /** DLOCK.PROCLAIM everywhere: `owner`'s lock with `token` held as `newOwner`. */
  async proclaim(owner: string, token: bigint, newOwner: string): Promise<Tally> {
    const args = cmd.proclaim(this.resource, owner, token, newOwner);
    return tally(await Promise.all(this.backend.nodes.everywhere().map((n) => this.backend.nodes.call(n, args, { acked: true }))));
  }

  /** DLOCK.STATUS on every node: each node's reply, or why it gave none. */
  async status(): Promise<Outcome[]> {
    const args = cmd.status(this.resource);
    return Promise.all(this.backend.nodes.everywhere().map((n) => this.backend.nodes.call(n, args)));
  }

  /**
   * DLOCK.OBSERVE on `node`, after the holder last seen there (see commands.ts): blocks on the
   * node for up to `timeout` ms, on a connection of its own, cut short when `signal` aborts.
   */
  async observe(node: number, after: readonly [bigint, string] | undefined, timeout: number, signal: AbortSignal): Promise<Outcome> {
    // A server notices a blocked client's timeout only at its next tick: its reply may come that late.
    return this.backend.nodes.call(node, cmd.observe(this.resource, after, timeout), { blocking: timeout + TIMEOUT_RESOLUTION, signal });
  }

  /** DLOCK.RELEASE of `owner` on `nodes` (every node by default): frees its grants, withdraws its waits. */
  async release(owner: string, nodes = this.backend.nodes.everywhere()): Promise<Tally> {
    const args = cmd.release(this.target, owner);
    return tally(await Promise.all(nodes.map((n) => this.backend.nodes.call(n, args))));
  }
}
