/**
 * Which redis-server a connection reached, so that one server never counts twice in a quorum
 * (client/src/transport/identity.rs, python/src/dlock/_pure/identity.py).
 *
 * A URL's text does not say which server it reaches: localhost and 127.0.0.1, a sentinel group's
 * master and the same master given directly, two seeds of one Redis Cluster all name one process.
 * Counted as two nodes, that one process made a quorum alone (issue 48). So every new connection,
 * before its first request, reads the server's run_id (DLOCK.RUNID, or INFO server from a module
 * older than that command: one per process, the same whatever address reached it, new after a
 * restart) and claims it for its quorum node in the manager's Registry. A server another node already claimed is refused: the connection is not
 * used, the node's calls fail from then on without a request sent, and every acquisition rejects
 * with a RangeError naming both nodes. A server that cannot say its run_id (an ACL user without
 * DLOCK.RUNID, or without INFO on an older module) is refused too, with what to allow: a quorum
 * that cannot be checked is not trusted.
 *
 * A claim lasts as long as the manager: it moves only when its place (a URL's server, a sentinel
 * group's master, a cluster master's address) shows another run_id (a restart, or the group's new
 * master after a failover), and the old one is let go then. A server a node no longer uses (a
 * master gone from a cluster's slot map) stays claimed, as in every client (docs/connecting.md).
 */

/** Which quorum node reaches each server, for one manager. */
export class Registry {
  /** A server's run_id -> the node reaching it, and how many of that node's servers last saw it. */
  readonly #owners = new Map<string, { node: number; servers: number }>();
  /** The first duplicate found, in words: every acquisition is refused with it from then on. */
  #refusal: string | undefined;
  readonly #refused = new Map<number, string>();
  readonly #met: boolean[];

  constructor(readonly names: readonly string[]) {
    this.#met = names.map(() => false);
  }

  /** Why every acquisition is refused: two nodes reach one server. */
  get refusal(): string | undefined {
    return this.#refusal;
  }

  /** Why `node` is refused, if it reaches a server another node reaches. */
  refused(node: number): string | undefined {
    return this.#refused.get(node);
  }

  /**
   * `node` was met: a connection of it identified its server (or was refused), or a call of it
   * ended (a node down counts: nothing to identify until it is back).
   */
  met(node: number): void {
    this.#met[node] = true;
  }

  /**
   * Whether every node was met once. A manager's first lock may count a node's grant while another
   * node that reaches the same server is still connecting: it waits for this first, so that first
   * call is the one refused.
   */
  get allMet(): boolean {
    return this.#met.every(Boolean);
  }

  /**
   * `node` sees `runId` where it saw `previous` (a restart, another master after a failover): the
   * new one claimed and the old let go; or why not (another node holds it).
   */
  claim(node: number, runId: string, previous: string | undefined): string | undefined {
    const owner = this.#owners.get(runId);
    if (owner !== undefined && owner.node !== node) {
      const why = this.#duplicate(owner.node, node, runId);
      this.#refusal ??= why;
      this.#refused.set(node, why);
      return why;
    }
    this.#owners.set(runId, { node, servers: (owner?.servers ?? 0) + 1 });
    if (previous !== undefined) this.#release(previous);
    return undefined;
  }

  #release(runId: string): void {
    const owner = this.#owners.get(runId);
    if (owner === undefined) return;
    if (owner.servers <= 1) this.#owners.delete(runId);
    else this.#owners.set(runId, { ...owner, servers: owner.servers - 1 });
  }

  /** The refusal's words: both nodes in the order given, whichever connected first. */
  #duplicate(a: number, b: number, runId: string): string {
    const [first, second] = [this.names[Math.min(a, b)], this.names[Math.max(a, b)]];
    return `nodes ${first} and ${second} are the same server (run_id ${runId}): list each server once`;
  }
}

/**
 * One place in the registry (a plain node's server, a cluster master's address, a sentinel group's
 * master whichever server it is): the run_id its connections last showed. A sentinel group's
 * masters share their node's one Identity; `another()` makes a new place.
 */
export class Identity {
  #seen: string | undefined;

  constructor(
    readonly registry: Registry,
    readonly node: number,
  ) {}

  /** The same node's identity for another of its servers (a cluster's other masters). */
  another(): Identity {
    return new Identity(this.registry, this.node);
  }

  /**
   * Claims the server whose run_id is `found` (read on a connection just made, before any request
   * on it; undefined: its INFO server had none); why the connection is refused otherwise.
   */
  check(found: string | undefined): string | undefined {
    try {
      if (!found) return "cannot tell which server this is: INFO server has no run_id";
      if (found === this.#seen) return undefined;
      const why = this.registry.claim(this.node, found, this.#seen);
      if (why === undefined) this.#seen = found;
      return why;
    } finally {
      this.registry.met(this.node);
    }
  }
}

/** The run_id field of an INFO server reply. */
export function runId(info: unknown): string | undefined {
  const line = String(info)
    .split(/\r?\n/)
    .find((l) => l.startsWith("run_id:"));
  const id = line?.slice("run_id:".length).trim();
  return id ? id : undefined;
}

/**
 * Whether `said` (an error reply, code first) is the server not knowing the command: a module older
 * than DLOCK.RUNID (or none), whose run_id INFO server still gives.
 */
export function unknownCommand(said: string): boolean {
  return /^(ERR )?unknown command/i.test(said);
}

/** Why a server that refused DLOCK.RUNID (it `said` so: NOPERM, a user without it) is refused. */
export function runIdRefused(said: string): string {
  return `cannot tell which server this is (DLOCK.RUNID refused: ${said}): allow the user DLOCK.RUNID (+dlock.runid; +@dlock has it on Redis 7.2+), which dlock reads the server's run_id with`;
}

/** Why a server that refused INFO server (it `said` so; a module older than DLOCK.RUNID) is refused. */
export function infoRefused(said: string): string {
  return `cannot tell which server this is (INFO server refused: ${said}): allow the user INFO (+info), which dlock reads the server's run_id with`;
}
