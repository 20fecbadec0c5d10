/**
 * Errors, as classes (the Rust client's Error variants, Python's dlock.errors). Their messages are
 * the words every dlock client uses (conformance/errors.json): which lock or node, what failed,
 * and what to do.
 */

/** `n` and its noun, singular or plural: `1 attempt`, `3 attempts`. */
export function count(n: number, noun: string): string {
  return n === 1 ? `1 ${noun}` : `${n} ${noun}s`;
}

/** One node's failure: which node (its URL, password hidden) and why. */
export interface NodeFailure {
  readonly node: string;
  readonly reason: string;
  /**
   * The call got no reply within its time (as opposed to a refused connection, a broken one or
   * an error reply): for a server-side wait, also how the end of a wait the server answered late
   * looks (attempt.ts `classify` tells the two apart).
   */
  readonly noReply?: boolean;
  /**
   * A refusal met while a connection was set up that connecting again cannot cure
   * (conformance/README.md): "setup" for credentials or permission refused (NOAUTH, WRONGPASS,
   * NOPERM), "database" for a database the server does not have. Final for the call that met it.
   */
  readonly refused?: "setup" | "database";
}

/** Base class of every dlock error. */
export class DlockError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Enough nodes answered, but another owner holds the resource (try-lock, or `wait` ran out). */
export class LockContendedError extends DlockError {
  constructor(
    readonly resource: string,
    readonly attempts: number,
  ) {
    super(`lock ${JSON.stringify(resource)} is held by another owner (${count(attempts, "attempt")})`);
  }
}

/** Too few nodes answered for a quorum to be possible; `failures` says which and why. */
export class NoQuorumError extends DlockError {
  constructor(
    readonly resource: string,
    readonly needed: number,
    readonly failures: readonly NodeFailure[],
  ) {
    const why = failures.map((f) => `${f.node}: ${f.reason}`).join("; ");
    super(`no quorum for ${JSON.stringify(resource)}: ${count(needed, "node")} needed, ${failures.length} failed${why ? `: ${why}` : ""}`);
  }
}

/** The lock is no longer held on a quorum (it expired, or was taken over). */
export class LockLostError extends DlockError {
  /** `hint`: what a too-short TTL adds (units.ts). */
  constructor(
    readonly resource: string,
    hint = "",
  ) {
    super(`lock ${JSON.stringify(resource)} was lost (no longer held on a majority): stop using its token${hint}`);
  }
}

/**
 * A guarded write (`lock.guarded`) was refused: a newer holder already wrote through `gate` with
 * a larger token than `token`. Nothing changed, and the lock is marked lost.
 */
export class StaleTokenError extends LockLostError {
  constructor(
    resource: string,
    readonly gate: string,
    readonly token: bigint,
  ) {
    super(resource);
    this.message = `lock ${JSON.stringify(resource)} was lost: gate ${JSON.stringify(gate)} has seen a newer token than ${token}; nothing was written`;
  }
}

/** Granted, but the round took so long that no validity was left: released at once. */
export class ValidityExpiredError extends DlockError {
  /** `hint`: what a too-short TTL adds (units.ts). */
  constructor(
    readonly resource: string,
    hint = "",
  ) {
    super(`lock ${JSON.stringify(resource)} was granted, but its validity ran out while acquiring: give a longer TTL${hint}`);
  }
}

/** A node refused the command itself (an error reply that is not about the lock's state). */
export class NodeError extends DlockError {
  constructor(
    readonly failures: readonly NodeFailure[],
    message?: string,
  ) {
    super(message ?? failures.map((f) => `${f.node}: ${f.reason}`).join("; "));
  }
}

/** A node holds the resource as another kind (exclusive vs shared vs semaphore): never retried. */
export class WrongKindError extends DlockError {
  constructor(
    readonly resource: string,
    readonly node: string,
    readonly reason: string,
  ) {
    super(`lock ${JSON.stringify(resource)} is held as another kind on ${node}: ${reason}`);
  }
}

export function isWrongKind(failure: NodeFailure): boolean {
  return failure.reason.includes("WRONGKIND");
}

/**
 * A node refused an argument of the request (`ERR ... must be ...`: a TTL over its
 * dlock.max-ttl-ms, say), which asking again cannot change: the call ends at once, a RangeError
 * as the arguments refused before any node is asked are.
 */
export class ArgumentRefusedError extends RangeError {
  constructor(
    readonly resource: string,
    readonly node: string,
    readonly reason: string,
  ) {
    super(`lock ${JSON.stringify(resource)}: ${node} refused an argument: ${reason}`);
    this.name = "ArgumentRefusedError";
  }
}

/**
 * A node refused the URL's database (SELECT: the server has fewer): a bad argument, which no
 * wait can cure; its message names the node and what the server said.
 */
export class DatabaseRefusedError extends ArgumentRefusedError {
  constructor(resource: string, node: string, reason: string) {
    super(resource, node, reason);
    this.message = `lock ${JSON.stringify(resource)}: ${node}: ${reason}`;
    this.name = "DatabaseRefusedError";
  }
}

/**
 * An error reply refusing an argument of the request: `ERR <argument> must be <what it takes>`,
 * as every argument check of the module words it (src/wire/errors.rs).
 */
export function isRefusedArgument(failure: NodeFailure): boolean {
  return failure.reason.startsWith("ERR ") && failure.reason.includes(" must be ");
}
