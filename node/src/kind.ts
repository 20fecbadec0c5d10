/**
 * What a lock request takes (client/src/kind.rs, python/src/dlock/_pure/kind.py): the exclusive
 * lock (the default), a shared (reader's) hold, or one permit of a semaphore, and the quorum
 * each needs (docs/shared.md).
 */
import { majority, semaphoreQuorum } from "./timing.js";

/** The largest semaphore limit the module accepts. */
export const MAX_LIMIT = 10_000;

/** What a hold is: exclusive (the default), shared (a reader's), or one permit of a semaphore. */
export type Kind =
  | { readonly type: "exclusive" }
  | { readonly type: "shared" }
  | { readonly type: "semaphore"; readonly limit: number };

export const EXCLUSIVE: Kind = { type: "exclusive" };

/** Nodes that must grant, commit and extend a hold of `kind` on `nodes` nodes. */
export function quorum(nodes: number, kind: Kind = EXCLUSIVE): number {
  return kind.type === "semaphore" ? semaphoreQuorum(nodes, kind.limit) : majority(nodes);
}
