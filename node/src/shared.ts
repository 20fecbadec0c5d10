/**
 * What a manager and its locks share: the nodes, one call to a node (with replica
 * acknowledgement), releases everywhere, the retry pause and validity; and how replies are tallied.
 */
import { type NodeFailure } from "./errors.js";
import { Failed, RedisNode, type Reply } from "./node.js";
import { ClusterNode } from "./cluster.js";
import { SentinelNode } from "./sentinel.js";
import { type Kind, now, quorum, validity } from "./timing.js";
import { type AttemptError } from "./verdicts.js";
import { type Settings, TIMEOUT_RESOLUTION } from "./settings.js";

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
export const isOne = (reply: Reply | undefined): boolean => reply === "1";

export function tokenOf(reply: Reply): bigint | undefined {
  if (typeof reply === "string" && /^\d+$/.test(reply)) {
    const token = BigInt(reply);
    return token > 0n ? token : undefined;
  }
  return undefined;
}

export interface Outcome {
  readonly reply?: Reply;
  readonly failure?: NodeFailure;
}

/** Nodes, settings and the calls every round makes. */
export class Shared {
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

export type Granted = { readonly owner: string; readonly token: bigint; readonly validity: number; readonly stale?: AbortController };
export type Attempt = { ok: true; granted: Granted } | { ok: false; error: AttemptError };
