/**
 * The commit a hold may owe, free of I/O (client/src/commit.rs, ported; docs/protocol.md §4.1;
 * conformance/commits.json).
 *
 * An attempt that does not wait on the nodes (`acquire` without `wait`, retry mode) holds once a
 * quorum granted: its grants are plain, and no ticket can wound them, so exclusion does not need
 * the commit. Its token does: the largest grant is a fencing token only once a quorum committed it
 * (§4). So the commit is paid when the token is first read, and only then: FENCE on every node
 * that granted, the hold's token, the lease set afresh. A quorum of commits gives the token; too
 * few left possible makes the lock lost, never an uncommitted token. A queued hold committed
 * before it was held (a smaller ticket may wound a tentative grant, §5), one node has nothing to
 * commit, and with fencing off there is no fencing token to commit.
 */

/** Whether a hold taken by an attempt of this kind owes a commit before its token is read. */
export function owed(noWait: boolean, nodes: number, fencing: boolean): boolean {
  return noWait && nodes > 1 && fencing;
}

/** Where a commit stands: replies still decide it (reading waits), a quorum committed the token, or too few nodes can still commit (the lock is lost). */
export type Outcome = { readonly outcome: "pending" } | { readonly outcome: "committed"; readonly token: bigint } | { readonly outcome: "lost" };

const PENDING: Outcome = { outcome: "pending" };
const LOST: Outcome = { outcome: "lost" };

/** One commit of one hold's token. */
export class Commit {
  /** The nodes asked whose answer has not come. */
  readonly #pending: boolean[];
  #committed = 0;
  #outcome: Outcome = PENDING;

  private constructor(
    readonly needed: number,
    readonly token: bigint,
    nodes: number,
  ) {
    this.#pending = new Array<boolean>(nodes).fill(false);
  }

  /**
   * Starts the commit of `token` on `holding` (the nodes that granted it), held once `needed` of
   * them committed: the machine and the nodes to send FENCE to.
   */
  static start(nodes: number, needed: number, token: bigint, holding: readonly number[]): [Commit, number[]] {
    const commit = new Commit(Math.max(needed, 1), token, nodes);
    const asked = holding.filter((n) => n >= 0 && n < nodes);
    for (const n of asked) commit.#pending[n] = true;
    commit.#decide();
    return [commit, asked];
  }

  get outcome(): Outcome {
    return this.#outcome;
  }

  /**
   * `node`'s answer to its FENCE: committed, or not (refused: no longer held by this owner; or the
   * node failed). Answers from nodes not asked, repeated, or after the outcome is decided change
   * nothing.
   */
  onFenced(node: number, committed: boolean): Outcome {
    if (this.#outcome.outcome !== "pending" || this.#pending[node] !== true) return this.#outcome;
    this.#pending[node] = false;
    if (committed) this.#committed += 1;
    this.#decide();
    return this.#outcome;
  }

  #decide(): void {
    const open = this.#pending.filter(Boolean).length;
    if (this.#committed >= this.needed) this.#outcome = { outcome: "committed", token: this.token };
    else if (this.#committed + open < this.needed) this.#outcome = LOST;
  }
}
