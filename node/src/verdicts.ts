/**
 * What the replies of one round come to (client/src/round.rs's pure functions,
 * python/src/dlock/_verdicts.py): votes, the phase-1 verdict, the commit verdict. `needed` is the
 * kind's quorum.
 */
import type { NodeFailure } from "./errors.js";
import { isWrongKind } from "./errors.js";

/** One node's answer to ACQUIRE. */
export type Vote =
  | { readonly type: "granted"; readonly token: bigint }
  | { readonly type: "refused" }
  | { readonly type: "failed"; readonly failure: NodeFailure };

/** Why one attempt failed; the caller retries or turns it into an error. */
export type AttemptError =
  | { readonly type: "contended" }
  | { readonly type: "no_quorum"; readonly failures: readonly NodeFailure[] }
  | { readonly type: "wrong_kind"; readonly failure: NodeFailure }
  | { readonly type: "expired" };

export type Verdict = { readonly ok: true; readonly token: bigint } | { readonly ok: false; readonly error: AttemptError };

/** Granting nodes with their tokens, and the nodes that failed. */
export interface Count {
  readonly grants: ReadonlyArray<readonly [node: number, token: bigint]>;
  readonly failures: readonly NodeFailure[];
}

export function countVotes(votes: readonly Vote[]): Count {
  const grants: Array<[number, bigint]> = [];
  const failures: NodeFailure[] = [];
  votes.forEach((vote, node) => {
    if (vote.type === "granted") grants.push([node, vote.token]);
    else if (vote.type === "failed") failures.push(vote.failure);
  });
  return { grants, failures };
}

/**
 * Nodes that failed and may be asked again within the same attempt (ACQUIRE by the same owner
 * is idempotent), but only when that can still change the outcome.
 */
export function nodesWorthAskingAgain(votes: readonly Vote[], needed: number): number[] {
  const granted = votes.filter((v) => v.type === "granted").length;
  const failed = votes.flatMap((v, i) => (v.type === "failed" ? [i] : []));
  if (granted >= needed || granted + failed.length < needed) return [];
  return failed;
}

/**
 * Phase 1: the largest granted token if `needed` nodes granted; else no quorum (too few nodes
 * answered at all) or contended (enough answered but others hold it).
 */
export function quorumToken(nodes: number, needed: number, count: Count): Verdict {
  if (count.grants.length >= needed && count.grants.length > 0) {
    const top = count.grants.reduce((max, [, t]) => (t > max ? t : max), 0n);
    return { ok: true, token: top };
  }
  const wrong = count.failures.find(isWrongKind);
  if (wrong) return { ok: false, error: { type: "wrong_kind", failure: wrong } };
  if (nodes - count.failures.length < needed) {
    return { ok: false, error: { type: "no_quorum", failures: [...count.failures] } };
  }
  return { ok: false, error: { type: "contended" } };
}

/**
 * Phase 2: `needed` nodes must have committed. A refusal after validity ran out is expiry;
 * otherwise every node that kept the commit from the quorum is named. Undefined when committed.
 */
export function commitVerdict(
  needed: number,
  count: Count,
  refused: readonly NodeFailure[],
  valid: boolean,
): AttemptError | undefined {
  if (count.grants.length - refused.length >= needed) return undefined;
  if (!valid) return { type: "expired" };
  return { type: "no_quorum", failures: [...count.failures, ...refused] };
}
