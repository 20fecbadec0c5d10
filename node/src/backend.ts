/**
 * What a manager and the locks it hands out share (client/src/backend.rs): the nodes, one call
 * to a node (with its replica acknowledgement), the work left running in the background, the
 * retry pause and validity.
 */
import { explain } from "./diagnosis.js";
import { type NodeFailure } from "./errors.js";
import { type Kind, quorum } from "./kind.js";
import { type Settings, TIMEOUT_RESOLUTION } from "./options.js";
import { later, now, validity } from "./timing.js";
import { Cluster } from "./transport/cluster.js";
import type { Registry } from "./transport/identity.js";
import { Sentinel } from "./transport/sentinel.js";
import { Failed, Server, type Reply } from "./transport/server.js";

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * Sleeps `ms`, cut short when one of `signals` aborts: true when the time ran out, false when cut
 * short. Its timer and listeners go with it either way (a watchdog's pause must not keep a
 * released lock's process alive).
 */
export function sleepUnless(ms: number, signals: readonly AbortSignal[]): Promise<boolean> {
  if (signals.some((s) => s.aborted)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (slept: boolean): void => {
      cancelTimer();
      for (const s of signals) s.removeEventListener("abort", cut);
      resolve(slept);
    };
    const cut = (): void => done(false);
    const cancelTimer = later(() => done(true), ms); // a long TTL's renewal may be weeks away
    for (const s of signals) s.addEventListener("abort", cut, { once: true });
  });
}

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

/** Nodes, settings, and one call to a node. */
export class Backend {
  readonly needed: (kind: Kind) => number;
  readonly background = new Set<Promise<unknown>>();
  /** Aborted when the manager closes: what runs until stopped (an observer) stops then. */
  readonly closing = new AbortController();

  constructor(
    readonly nodes: ReadonlyArray<Server | Sentinel | Cluster>,
    readonly opts: Settings,
    /** Which node reaches which server: one server never counts twice (transport/identity.ts). */
    readonly registry: Registry,
  ) {
    this.needed = (kind) => quorum(nodes.length, kind);
  }

  /** Why every acquisition is refused: two nodes reach one server (undefined while none do). */
  get refusal(): string | undefined {
    return this.registry.refusal;
  }

  /** Waits, at most `within` ms, until every node was met once (identity.ts): only a manager's first lock waits. */
  async meetAll(within: number): Promise<void> {
    const until = performance.now() + within;
    while (!this.registry.allMet && performance.now() < until) await sleep(1);
  }

  /** Keeps a background promise until it settles (close() waits for them). */
  spawn(work: Promise<unknown>): void {
    const p = work.catch(() => undefined);
    this.background.add(p);
    void p.finally(() => this.background.delete(p));
  }

  /** One command on one node, with its replica acknowledgement when it writes; a blocking one ends early when `signal` aborts. */
  async call(node: number, args: string[], { acked = false, blocking = 0, signal }: { acked?: boolean; blocking?: number; signal?: AbortSignal } = {}): Promise<Outcome> {
    const n = this.nodes[node]!;
    const refused = this.registry.refused(node);
    if (refused !== undefined) return { failure: { node: n.name, reason: refused } }; // never asked again
    try {
      return await this.#call(n, args, { acked, blocking, signal });
    } finally {
      this.registry.met(node);
    }
  }

  async #call(n: Server | Sentinel | Cluster, args: string[], { acked, blocking, signal }: { acked: boolean; blocking: number; signal: AbortSignal | undefined }): Promise<Outcome> {
    const ack = acked && (this.opts.ack?.everywhere || !(n instanceof Server)) ? this.opts.ack : undefined;
    const extra = ack ? ack.timeout + TIMEOUT_RESOLUTION : 0;
    try {
      const whole = this.opts.timeout + blocking + extra;
      const replies = ack
        ? await n.pipeline([args, ["WAIT", String(ack.replicas), String(ack.timeout)]], this.opts.timeout, whole, blocking > 0)
        : [await (blocking > 0 ? n.callBlocking(args, this.opts.timeout, whole, signal) : n.call(args, this.opts.timeout))];
      const reply = replies[0]!;
      if (ack && (tokenOf(reply) !== undefined || isOne(reply))) {
        const acked = Number(replies[1] ?? 0);
        if (acked < ack.replicas) {
          return { failure: { node: n.name, reason: `written but only ${acked} of ${ack.replicas} replicas acknowledged within ${ack.timeout} ms` } };
        }
      }
      return { reply };
    } catch (e) {
      return { failure: explain(e instanceof Failed ? e.failure : { node: n.name, reason: String(e) }) };
    }
  }

  everywhere(): number[] {
    return this.nodes.map((_, i) => i);
  }

  retryPause(): number {
    return this.opts.retryDelay + Math.random() * this.opts.retryJitter;
  }

  validity(ttl: number, since: number): number | undefined {
    return validity(ttl, now() - since, this.opts.drift);
  }
}
