/**
 * The quorum nodes (client/src/transport/nodes.rs): each node URL made into its node (one server,
 * a Redis Cluster, a sentinel-managed master), one call to a node with its replica
 * acknowledgement (ack.ts) and its failure said the clients' way (diagnosis.ts), and which server
 * each node reaches (identity.ts): one server never counts twice.
 */
import type { Logins } from "../connect.js";
import type { NodeFailure } from "../errors.js";
import { type Ack, ackFor, extraTime, shortfall, withWait } from "./ack.js";
import { Cluster } from "./cluster.js";
import { explain } from "./diagnosis.js";
import { Identity, Registry } from "./identity.js";
import { Sentinel } from "./sentinel.js";
import { Failed, type Reply, Server } from "./server.js";
import { type NodeUrl, checkScheme, parseNode } from "./urls.js";

/** A node's answer to one call: its reply, or why it gave none. */
export interface Outcome {
  readonly reply?: Reply;
  readonly failure?: NodeFailure;
}

/** The node URLs parsed, each given once (checked before any option, as the manager always did). */
export function parseNodes(urls: readonly unknown[]): NodeUrl[] {
  const parsed = urls.map((url) => parseNode(checkScheme(url)));
  const names = parsed.map((p) => p.name);
  // Different texts can reach one server too: identity.ts checks what each reaches.
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) throw new RangeError(`node ${twice} is given twice: list each server once`);
  return parsed;
}

export class Nodes {
  readonly #members: ReadonlyArray<Server | Sentinel | Cluster>;
  /** Which node reaches which server: one server never counts twice (identity.ts). */
  readonly #registry: Registry;

  constructor(
    parsed: readonly NodeUrl[],
    logins: Logins,
    /** The per-node call timeout (ms). */
    readonly timeout: number,
    /** What each write waits for, replicas (ack.ts). */
    readonly ack: Ack | undefined,
  ) {
    this.#registry = new Registry(parsed.map((p) => p.name));
    this.#members = parsed.map((p, i) => {
      const identity = new Identity(this.#registry, i);
      if (p.form === "single") return new Server(p.name, p.url, logins.connection, timeout, identity);
      // The URL's login is the master's; without one, the manager's.
      const login = p.login.password !== undefined ? { tls: logins.connection.tls, ...p.login } : logins.connection;
      if (p.form === "sentinel") return new Sentinel(p.name, p.sentinels, p.service, p.tls, login, logins.sentinel, timeout, identity);
      return new Cluster(p.name, p.host, p.port, p.tls, login, timeout, identity);
    });
  }

  get length(): number {
    return this.#members.length;
  }

  name(node: number): string {
    return this.#members[node]!.name;
  }

  names(): string[] {
    return this.#members.map((n) => n.name);
  }

  everywhere(): number[] {
    return this.#members.map((_, i) => i);
  }

  /** Why every acquisition is refused: two nodes reach one server (undefined while none do). */
  get refusal(): string | undefined {
    return this.#registry.refusal;
  }

  /** Waits, at most `within` ms, until every node was met once (identity.ts): only a manager's first lock waits. */
  async meetAll(within: number): Promise<void> {
    const until = performance.now() + within;
    while (!this.#registry.allMet && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 1));
  }

  /** One command on one node, with its replica acknowledgement when it writes (`acked`); a blocking one ends early when `signal` aborts. */
  async call(node: number, args: string[], { acked = false, blocking = 0, signal }: { acked?: boolean; blocking?: number; signal?: AbortSignal } = {}): Promise<Outcome> {
    const n = this.#members[node]!;
    const refused = this.#registry.refused(node);
    if (refused !== undefined) return { failure: { node: n.name, reason: refused } }; // never asked again
    try {
      return await this.#call(n, args, { ack: acked ? ackFor(this.ack, !(n instanceof Server)) : undefined, blocking, signal });
    } finally {
      this.#registry.met(node);
    }
  }

  async #call(n: Server | Sentinel | Cluster, args: string[], { ack, blocking, signal }: { ack: Ack | undefined; blocking: number; signal: AbortSignal | undefined }): Promise<Outcome> {
    try {
      const whole = this.timeout + blocking + extraTime(ack);
      const replies = ack
        ? await n.pipeline(withWait(args, ack), this.timeout, whole, blocking > 0)
        : [await (blocking > 0 ? n.callBlocking(args, this.timeout, whole, signal) : n.call(args, this.timeout))];
      const short = ack && shortfall(replies, ack);
      return short ? { failure: { node: n.name, reason: short } } : { reply: replies[0]! };
    } catch (e) {
      return { failure: explain(e instanceof Failed ? e.failure : { node: n.name, reason: String(e) }) };
    }
  }

  close(): void {
    for (const node of this.#members) node.close();
  }
}
