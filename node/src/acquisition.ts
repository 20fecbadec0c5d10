/**
 * The decisions of one fair (queue-mode) acquisition across N nodes as a pure state machine
 * (client/src/acquisition.rs, the machine the model checker explores; conformance/acquisition.json):
 * replies go in, the next steps come out.
 *
 * Round by round (docs/protocol.md §5):
 * 1. Wait on every node with one ticket (ACQUIRE ... WAIT ... TICKET t), as owner `o:round`.
 * 2. With grants from a quorum, commit their largest token with FENCE on the granting nodes. A
 *    grant is tentative until committed; a smaller ticket may wound it meanwhile, and the node
 *    then refuses the FENCE.
 * 3. Committed on the quorum: held. Otherwise release everything of the round and wait again
 *    with the same ticket under a new owner name.
 * With one node there is nothing to commit: the grant is the lock.
 *
 * An attempt that does not wait on the nodes (acquire without `wait`, retry mode: attempt.ts)
 * runs the same machine for one round only (`startOnce`): every node's answer comes within the
 * per-node timeout, so the commit waits for all of them and covers every node that granted; a
 * commit that misses fails the acquisition; with fencing off the grants are the lock.
 */

export type Event =
  | { readonly event: "granted"; readonly node: number; readonly round: number; readonly token: bigint }
  | { readonly event: "unavailable"; readonly node: number; readonly round: number }
  | { readonly event: "fenced"; readonly node: number; readonly round: number; readonly committed: boolean };

export type Step =
  | { readonly step: "wait"; readonly round: number; readonly nodes: number[] }
  | { readonly step: "fence"; readonly round: number; readonly token: bigint; readonly nodes: number[] }
  | { readonly step: "release"; readonly round: number; readonly nodes: number[] }
  | { readonly step: "held"; readonly token: bigint }
  | { readonly step: "failed" };

type Phase = "waiting" | "committing" | "held" | "failed";

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** One acquisition, possibly over several rounds. */
export class Acquisition {
  #round = 0;
  #granted: Array<bigint | undefined>;
  #unavailable: boolean[];
  #phase: Phase = "waiting";
  #token = 0n;
  #pending: boolean[] = [];
  #committed: boolean[] = [];
  readonly needed: number;

  private constructor(
    readonly nodes: number,
    needed: number,
    /** One round only: a commit that misses fails the acquisition. */
    readonly once = false,
    /** Grants are committed (FENCE) before the lock is held; off only with fencing off. */
    readonly commit = true,
  ) {
    this.needed = Math.min(Math.max(needed, 1), Math.max(nodes, 1));
    this.#granted = new Array<bigint | undefined>(nodes).fill(undefined);
    this.#unavailable = new Array<boolean>(nodes).fill(false);
  }

  /** Round 0 of an acquisition held once `needed` nodes committed, and the steps to send. */
  static start(nodes: number, needed: number): [Acquisition, Step[]] {
    return [new Acquisition(nodes, needed), [{ step: "wait", round: 0, nodes: range(nodes) }]];
  }

  /** One round (no server wait): held once `needed` nodes committed (granted, without `commit`). */
  static startOnce(nodes: number, needed: number, commit: boolean): [Acquisition, Step[]] {
    return [new Acquisition(nodes, needed, true, commit), [{ step: "wait", round: 0, nodes: range(nodes) }]];
  }

  get round(): number {
    return this.#round;
  }

  /** The token, once held. */
  held(): bigint | undefined {
    return this.#phase === "held" ? this.#token : undefined;
  }

  isOver(): boolean {
    return this.#phase === "held" || this.#phase === "failed";
  }

  /** Gives up from outside (a deadline, a refused kind): release everything of this round. */
  abandon(): Step[] {
    return this.isOver() ? [] : this.#fail();
  }

  /**
   * Feeds one reply. Replies of earlier rounds are stale: ignored, except a grant, which is
   * released at once (it would otherwise hold the lock on that node until its TTL).
   */
  on(event: Event): Step[] {
    if (event.node >= this.nodes || event.node < 0) return [];
    if (event.round !== this.#round) {
      if (event.event === "granted" && event.round < this.#round) {
        return [{ step: "release", round: event.round, nodes: [event.node] }];
      }
      return [];
    }
    switch (event.event) {
      case "granted":
        return this.#onGranted(event.node, event.token);
      case "unavailable":
        return this.#onUnavailable(event.node);
      case "fenced":
        return this.#onFenced(event.node, event.committed);
    }
  }

  /** The nodes that granted this round. */
  grantedNodes(): number[] {
    return range(this.nodes).filter((n) => this.#granted[n] !== undefined);
  }

  #onGranted(node: number, token: bigint): Step[] {
    this.#granted[node] = token;
    if (this.#phase !== "waiting") return []; // a late grant: released with everything else at the end
    return this.#commitWhenReady();
  }

  /**
   * With grants from a quorum (and, in one round only, every node's answer in, so that the commit
   * covers every node that granted): commit the largest token, or hold it.
   */
  #commitWhenReady(): Step[] {
    const grants = this.grantedNodes();
    const answered = range(this.nodes).every((n) => this.#granted[n] !== undefined || this.#unavailable[n]);
    if (grants.length < this.needed || (this.once && !answered)) return [];
    let top = 0n;
    for (const n of grants) {
      const t = this.#granted[n]!;
      if (t > top) top = t;
    }
    if (this.nodes === 1 || !this.commit) return this.#hold(top);
    this.#phase = "committing";
    this.#token = top;
    this.#pending = range(this.nodes).map((n) => grants.includes(n));
    this.#committed = new Array<boolean>(this.nodes).fill(false);
    return [{ step: "fence", round: this.#round, token: top, nodes: grants }];
  }

  #onUnavailable(node: number): Step[] {
    this.#unavailable[node] = true;
    const possible = this.#unavailable.filter((u) => !u).length;
    if (this.#phase === "waiting" && possible < this.needed) return this.#fail();
    if (this.#phase === "waiting" && this.once) return this.#commitWhenReady(); // maybe the last answer awaited
    return [];
  }

  /** No quorum this time: release everything of this round and give up. */
  #fail(): Step[] {
    this.#phase = "failed";
    return [this.#releaseAll(), { step: "failed" }];
  }

  #onFenced(node: number, ok: boolean): Step[] {
    if (this.#phase !== "committing" || !this.#pending[node]) return []; // not committing, or a duplicate
    this.#pending[node] = false;
    this.#committed[node] = ok;
    const count = this.#committed.filter(Boolean).length;
    if (count >= this.needed) return this.#hold(this.#token);
    if (count + this.#pending.filter(Boolean).length < this.needed) return this.once ? this.#fail() : this.#nextRound();
    return [];
  }

  /** Held. Waits still queued on nodes that did not grant stay (a late grant there is the holder's too). */
  #hold(token: bigint): Step[] {
    this.#phase = "held";
    this.#token = token;
    return [{ step: "held", token }];
  }

  /** The commit missed the quorum: release everything of this round, wait again. */
  #nextRound(): Step[] {
    const release = this.#releaseAll();
    this.#round += 1;
    this.#granted = new Array<bigint | undefined>(this.nodes).fill(undefined);
    this.#unavailable = new Array<boolean>(this.nodes).fill(false);
    this.#phase = "waiting";
    return [release, { step: "wait", round: this.#round, nodes: range(this.nodes) }];
  }

  #releaseAll(): Step {
    return { step: "release", round: this.#round, nodes: range(this.nodes) };
  }
}
