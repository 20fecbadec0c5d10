/**
 * A held lock: its fencing token, owner and validity; extend(), release() and the watchdog, which
 * keeps the lease-loss contract (renewal.ts, docs/election.md). A hold taken without waiting on
 * the nodes may owe its token's commit (commit.ts): `token()` pays it on the first read, one FENCE
 * round shared by every reader, and no token leaves before a quorum committed it. The writes of the
 * nodes' TTL (extend(), the watchdog's extensions, the commit) go one at a time (#write), so the
 * validity the client keeps is the one the nodes keep.
 */
import type { Granted } from "./driver.js";
import { sleepUnless } from "./backend.js";
import type { Calls, Tally } from "./calls.js";
import { Commit, type Outcome } from "./commit.js";
import { type DlockError, LockLostError, NoQuorumError, StaleTokenError } from "./errors.js";
import type { Kind } from "./kind.js";
import { type Extension, renewMargin, renewal } from "./renewal.js";
import { now } from "./timing.js";
import { checkLease, unitHint } from "./units.js";

/** A connection to the data's Redis (with the module): node-redis's client, or anything with its `sendCommand`. */
export interface DataClient {
  sendCommand(args: string[]): Promise<unknown>;
}

/** A held lock: its fencing token, owner and validity; extend(), guarded() and release(). */
export class Lock {
  /** The largest grant: the fencing token once a quorum committed it. */
  readonly #token: bigint;
  /** The nodes that granted it: those its commit goes to. */
  readonly #holding: readonly number[];
  /** Its commit is owed and has not succeeded yet (commit.ts). */
  #owed: boolean;
  /** The commit, once started: one for every reader, its outcome remembered. */
  #commit: Promise<bigint> | undefined;
  /** The TTL last set on the nodes (the acquire's, or the last extension's): a commit sets it again. */
  #ttlSet: number;
  #owner: string;
  #validUntil: number;
  /** The write of the nodes' TTL in flight (#write), settled once its outcome is applied. */
  #writing: Promise<void> | undefined;
  /** Aborted, and replaced, whenever the lease moves (#rebase): a watchdog waiting on its renew deadline looks again. */
  #moved = new AbortController();
  readonly #acquiredAt = now();
  #released = false;
  #lost = false;
  readonly #controller = new AbortController();
  /** Aborted on release: requests of the acquisition still out then know a grant they bring is stale. */
  readonly #stale: AbortController;
  /** Aborted before the release goes out: stops every watchdog of this lock, so no extension is sent after it. */
  readonly #halt = new AbortController();

  readonly resource: string;
  /** The resources held: the one of a lock, or the keys of a set (`lockAll`), in the caller's order. */
  readonly resources: readonly string[];
  readonly kind: Kind;

  /** @internal */
  constructor(
    private readonly calls: Calls,
    readonly ttl: number,
    granted: Granted,
  ) {
    this.resource = calls.resource;
    this.resources = typeof calls.target === "string" ? [calls.target] : calls.target.keys;
    this.kind = calls.kind;
    this.#token = granted.token;
    this.#holding = granted.holding;
    this.#owed = granted.owed;
    this.#ttlSet = ttl;
    this.#owner = granted.owner;
    this.#validUntil = now() + granted.validity;
    this.#stale = granted.stale;
  }

  /** The owner name the lock is held under on the nodes (32 hex digits and `:round`; a campaign's adds its value). */
  get owner(): string {
    return this.#owner;
  }

  /** Milliseconds the lock is still safe to use (0 once expired, or once known lost). */
  get validity(): number {
    if (this.#lost) return 0;
    return Math.max(0, this.#validUntil - now());
  }

  /** Aborted when the lock is lost (a watchdog extension failed, a guarded write was stale) or maxHold passed. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get lost(): boolean {
    return this.#lost;
  }

  /**
   * The fencing token (a bigint, larger than every earlier holder's). A hold taken without waiting
   * on several nodes with fencing on (`acquire` without `wait`, waitMode "retry") commits it on
   * the first read: FENCE on the nodes that granted, one round shared by every reader, the
   * validity counted afresh from it. LockLostError when that commit misses its quorum (the nodes
   * that committed are then given back the hold, in the background), when the validity is over by
   * then, or when the lock was released or is known lost before the read: the lock is then lost
   * (`lost`, `signal`) and every later read rejects alike. A read started before release() keeps
   * its commit's outcome. Nothing owed, or already committed: the token at once.
   */
  async token(): Promise<bigint> {
    if (!this.#owed) return this.#token;
    this.#commit ??= this.#released || this.#lost ? Promise.reject(new LockLostError(this.resource)) : this.#write(() => this.#committed());
    return this.#commit;
  }

  /** One token per resource, in the caller's order (`resources`): this lock's token for each, read as `token()` reads it (as a CrossSlotSet's `tokens()` gives them). */
  async tokens(): Promise<bigint[]> {
    const token = await this.token();
    return this.resources.map(() => token);
  }

  /** The owed commit, paid as the lease's one write in flight (#write): the token, or LockLostError. */
  async #committed(): Promise<bigint> {
    // Released or lost while an earlier write was out: nothing is sent.
    if (this.#released || this.#lost) throw new LockLostError(this.resource);
    const ttl = this.#ttlSet;
    const started = now();
    // Validity over: the lease may be someone else's by now, and no FENCE is sent.
    const outcome = this.validity === 0 ? undefined : await this.#fence(ttl);
    const left = outcome?.outcome === "committed" ? this.calls.backend.validity(ttl, started) : undefined;
    if (left === undefined) {
      const lost = new LockLostError(this.resource, unitHint(ttl));
      this.#lose(lost);
      // A FENCE still out may land later and keep the lost lock for a whole TTL: given back, as a
      // failed acquisition's grants are (best effort).
      if (outcome !== undefined) this.calls.backend.spawn(this.calls.release(this.#owner));
      throw lost;
    }
    if (this.#lost) throw new LockLostError(this.resource); // lost meanwhile (the watchdog's deadline, a stale write)
    // Released meanwhile: the FENCE went out before the RELEASE, so the token is committed and given.
    if (!this.#released) this.#rebase(now() + left, ttl); // from the commit round's start, as an extension's
    this.#owed = false;
    return this.#token;
  }

  /**
   * Runs `write`, one of the operations that set the nodes' TTL (extend(), the watchdog's
   * extension, the commit), as the lease's only one in flight, from before its requests are sent
   * until its outcome is applied: at once when none is in flight, else after it. So they are sent
   * in the order they are applied, and on a node's one connection they arrive in that order too:
   * the nodes keep the TTL of the last one, and so does the client (a commit's reply applied after
   * a later extension's would give the client a longer validity than the nodes give).
   */
  async #write<T>(write: () => Promise<T>): Promise<T> {
    while (this.#writing !== undefined) await this.#writing;
    const running = write();
    const settled = running.then(
      () => undefined,
      () => undefined,
    );
    this.#writing = settled;
    try {
      return await running;
    } finally {
      if (this.#writing === settled) this.#writing = undefined;
    }
  }

  /** The nodes confirmed `ttl` ms: the lease runs until `validUntil`, and a watchdog's renew deadline moves with it. */
  #rebase(validUntil: number, ttl: number): void {
    this.#validUntil = validUntil;
    this.#ttlSet = ttl;
    this.#moved.abort();
    this.#moved = new AbortController();
  }

  /** FENCE ... PX `ttl` on every node that granted, at once: the commit's first decided outcome. */
  #fence(ttl: number): Promise<Outcome> {
    const backend = this.calls.backend;
    const [commit, asked] = Commit.start(backend.nodes.length, backend.needed(this.kind), this.#token, this.#holding);
    if (commit.outcome.outcome !== "pending") return Promise.resolve(commit.outcome);
    return new Promise((resolve) => {
      for (const node of asked) {
        const fenced = this.calls.fence(node, this.#owner, this.#token, ttl).then(
          (failure) => failure === undefined,
          () => false,
        );
        // Replies after the outcome change nothing; close() still waits for them.
        backend.spawn(
          fenced.then((committed) => {
            const outcome = commit.onFenced(node, committed);
            if (outcome.outcome !== "pending") resolve(outcome);
          }),
        );
      }
    });
  }

  /**
   * Runs `command` (e.g. `["SET", "report", body]`) on `client` only if this lock's token is
   * still current at the key `gate`, raising the gate to it, in one step on that server
   * (DLOCK.GUARD); resolves to the command's reply. When a newer holder has written through the
   * gate, nothing changes, the lock is marked lost (`lost`, `signal`) and StaleTokenError (a
   * LockLostError) is thrown; a lock already known lost throws LockLostError and sends nothing.
   * The token is read as `token()` reads it: a commit still owed is paid first, and one that
   * fails throws its LockLostError before anything is sent. Other errors are node-redis's.
   */
  async guarded(client: DataClient, gate: string, command: string[]): Promise<unknown> {
    if (this.#lost) throw new LockLostError(this.resource);
    const token = await this.token(); // a commit owed is paid first
    try {
      return await client.sendCommand(["DLOCK.GUARD", gate, token.toString(), ...command]);
    } catch (e) {
      if (!(e instanceof Error) || !e.message.startsWith("STALE")) throw e;
      const stale = new StaleTokenError(this.resource, gate, token);
      this.#lose(stale);
      throw stale;
    }
  }

  #lose(reason: Error): void {
    this.#lost = true;
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
  }

  /** EXTEND on every node: the lock's validity starts afresh from `ttl` ms (default: the ttl it was taken with). */
  async extend(ttl: number = this.ttl): Promise<number> {
    const whole = checkLease(ttl, this.calls.backend.opts.drift);
    if (this.#released || this.#lost) throw new LockLostError(this.resource);
    return this.#write(async () => {
      if (this.#released || this.#lost) throw new LockLostError(this.resource); // while an earlier write was out
      const needed = this.calls.backend.needed(this.kind);
      const extended = await this.calls.extend(this.#owner, whole);
      if (typeof extended === "number") {
        this.#rebase(now() + extended, whole);
        return extended;
      }
      throw this.#failure(extended, needed, whole);
    });
  }

  /** Why a quorum did not do it: too few answered, or enough said it is not held. */
  #failure(t: Tally, needed: number, ttl = this.ttl): DlockError {
    if (t.done + t.refused < needed) return new NoQuorumError(this.resource, needed, t.unreachable);
    return new LockLostError(this.resource, unitHint(ttl));
  }

  /**
   * @internal Holds the lock under `owner` from now on (DLOCK.PROCLAIM, keeping token and lease).
   * When a quorum did not take it, the nodes that did are turned back and the error says why.
   * Stop the watchdog first: its extensions name one owner.
   */
  async rename(owner: string): Promise<void> {
    if (owner === this.#owner) return;
    if (this.#released || this.#lost) throw new LockLostError(this.resource);
    const needed = this.calls.backend.needed(this.kind);
    const t = await this.calls.proclaim(this.#owner, this.#token, owner);
    if (t.done >= needed) {
      this.#owner = owner;
      return;
    }
    await this.calls.proclaim(owner, this.#token, this.#owner);
    throw this.#failure(t, needed);
  }

  /** RELEASE on every node (a second call does nothing). */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    this.#halt.abort(); // before the RELEASE: no extension follows it
    this.#stale.abort();
    const needed = this.calls.backend.needed(this.kind);
    const t = await this.calls.release(this.#owner);
    if (t.done + t.refused < needed) throw new NoQuorumError(this.resource, needed, t.unreachable);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /**
   * @internal The watchdog (of `using`, of a leadership): extends every `interval` ms by the
   * lease-loss contract (renewal.ts), until stopped (the function it returns), released, lost, or
   * `maxHold` ms after the lock was taken (then `signal` aborts).
   */
  watch(interval: number, maxHold: number | undefined): () => void {
    const stop = new AbortController();
    const cap = maxHold === undefined ? undefined : this.#acquiredAt + maxHold;
    // Not among the manager's background work: close() need not wait for a lock still held.
    void this.#keepExtended(Math.max(1, interval), cap, stop.signal).catch(() => undefined);
    return () => stop.abort();
  }

  /**
   * The watchdog's loop (client/src/lock.rs keep_extended): extend after the pause `renewal`
   * decides; lost at the renew deadline unless a quorum confirmed an extension first, at once when
   * the nodes refuse one. Ends quietly when stopped, released, or lost otherwise (a stale guarded
   * write).
   */
  async #keepExtended(interval: number, cap: number | undefined, stop: AbortSignal): Promise<void> {
    const signals = [stop, this.#halt.signal, this.#controller.signal];
    let last: Extension = "extended";
    const lost = (): void => this.#lose(new LockLostError(this.resource, unitHint(this.ttl)));
    for (;;) {
      const left = Math.max(0, this.#validUntil - now());
      const next = renewal(this.ttl, interval, left, last);
      if (next === "lost") return lost();
      const capped = cap !== undefined && now() + next.extendIn >= cap;
      if (!(await sleepUnless(capped ? cap - now() : next.extendIn, signals))) return;
      if (capped) {
        this.#controller.abort(new LockLostError(this.resource, unitHint(this.ttl))); // held long enough: it runs out at its TTL
        return;
      }
      const extended = await this.#extendBefore(signals);
      if (extended === undefined) return; // stopped meanwhile: released, or about to be
      if (extended === "lost") return lost();
      last = extended;
    }
  }

  /**
   * One extension, as the lease's one write in flight (#write), raced against the renew deadline
   * (from the wait for an earlier write on): how it went, lost when the deadline came first,
   * undefined when stopped. One still waiting to be sent then is not sent; one on its way is not
   * applied.
   */
  async #extendBefore(signals: readonly AbortSignal[]): Promise<Extension | "lost" | undefined> {
    const settled = new AbortController(); // ends the deadline's timer once the extension is back
    let late = false;
    const extension = this.#write(async () => {
      if (late || signals.some((s) => s.aborted)) return undefined;
      const extended = await this.calls.extend(this.#owner, this.ttl);
      if (typeof extended === "number" && !late && !this.#lost) this.#rebase(now() + extended, this.ttl);
      return extended;
    });
    const timeUp = this.#renewDeadline([...signals, settled.signal]).then((came) => {
      late ||= came;
      return "time" as const;
    });
    const won = await Promise.race([extension, timeUp]);
    settled.abort();
    if (signals.some((s) => s.aborted)) return undefined;
    if (won === "time" || won === undefined) return "lost"; // even if the extension is still on its way
    if (typeof won === "number") return "extended";
    const nodes = this.calls.backend.nodes.length;
    return won.refused > nodes - this.calls.backend.needed(this.kind) ? "refused" : "unconfirmed";
  }

  /**
   * Sleeps until the renew deadline, `renewMargin` before the validity ends, following the lease
   * when a write confirmed meanwhile moves it: true when it came, false when cut short.
   */
  async #renewDeadline(signals: readonly AbortSignal[]): Promise<boolean> {
    for (;;) {
      const moved = this.#moved.signal;
      if (await sleepUnless(this.#validUntil - renewMargin(this.ttl) - now(), [...signals, moved])) return true;
      if (!moved.aborted || signals.some((s) => s.aborted)) return false;
    }
  }
}

/** Releases every lock of `locks`, the last taken first, whatever each answers (best effort: one that fails runs out at its TTL). */
export async function giveBack(locks: readonly Lock[]): Promise<void> {
  for (const lock of [...locks].reverse()) await lock.release().catch(() => undefined);
}

/**
 * A set whose keys span several slots of a Redis Cluster node (`lockAll` / `tryLockAll`), held as
 * its slot groups: one Lock each, taken one after the other in slot order (docs/multi.md). Each
 * group has its own token (`tokens()`: one per resource); extended and released together, and
 * lost as a whole when any group is (`signal` aborts, `lost`): the others are then released.
 */
export class CrossSlotSet {
  /** The set's name: its keys joined by commas, in the caller's order. */
  readonly resource: string;
  /** The resources held, in the caller's order. */
  readonly resources: readonly string[];
  /** The slot groups held, each a Lock (a set of one slot), in slot order. */
  readonly groups: readonly Lock[];
  /** Each resource's group. */
  readonly #of: ReadonlyMap<string, Lock>;
  readonly #controller = new AbortController();
  #lost = false;
  #released = false;
  /** The groups' release once the set is known lost. */
  #givenBack: Promise<void> | undefined;

  /** @internal */
  constructor(resources: readonly string[], groups: readonly Lock[]) {
    this.resources = [...resources];
    this.resource = resources.join(",");
    this.groups = [...groups];
    this.#of = new Map(groups.flatMap((lock) => lock.resources.map((key) => [key, lock] as const)));
    for (const lock of groups) {
      if (lock.signal.aborted) this.#lose(lock.signal.reason);
      else lock.signal.addEventListener("abort", () => this.#lose(lock.signal.reason), { once: true });
    }
  }

  /** Milliseconds before some group may be held by someone else (the least of the groups'; 0 once known lost). */
  get validity(): number {
    if (this.#lost) return 0;
    return Math.min(...this.groups.map((lock) => lock.validity));
  }

  /** Aborted when any group is lost (its watchdog, a stale guarded write, a failed commit or extension) or maxHold passed: the other groups are then released. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get lost(): boolean {
    return this.#lost;
  }

  /** Rejects (RangeError): each slot group has a token of its own; read `tokens()`. */
  async token(): Promise<bigint> {
    throw new RangeError(`a set across ${this.groups.length} slots has one token per slot group: use tokens()`);
  }

  /**
   * One token per resource, in the caller's order: its slot group's, read as `Lock.token()` reads
   * it (committed first if owed). Tokens of different groups come from different masters: each
   * fences its own group's resources only. A group's that cannot be read makes the set lost: the
   * other groups are released and LockLostError thrown.
   */
  async tokens(): Promise<bigint[]> {
    if (this.#lost) throw new LockLostError(this.resource);
    const byGroup = new Map<Lock, bigint>();
    for (const lock of this.groups) {
      try {
        byGroup.set(lock, await lock.token());
      } catch (e) {
        throw await this.#failed(e);
      }
    }
    return this.resources.map((key) => byGroup.get(this.#of.get(key)!)!);
  }

  /** EXTEND of every group (`ttl` ms, default each one's acquired TTL): the least validity. Any group not extended makes the set lost: the others are released and LockLostError thrown. */
  async extend(ttl?: number): Promise<number> {
    if (this.#lost || this.#released) throw new LockLostError(this.resource);
    let least = Infinity;
    for (const lock of this.groups) {
      try {
        least = Math.min(least, await lock.extend(ttl ?? lock.ttl));
      } catch (e) {
        throw await this.#failed(e);
      }
    }
    return least;
  }

  /** The set lost because of `cause`: every group given back, then the error to throw (an argument error as it is). */
  async #failed(cause: unknown): Promise<unknown> {
    if (cause instanceof TypeError || cause instanceof RangeError) return cause;
    this.#lose(cause);
    await this.#givenBack;
    return new LockLostError(this.resource);
  }

  #lose(reason: unknown): void {
    if (this.#lost) return;
    this.#lost = true;
    this.#controller.abort(reason instanceof Error ? reason : new LockLostError(this.resource));
    this.#givenBack = giveBack(this.groups);
  }

  /** RELEASE of every group, the last taken first (a second call does nothing); the first NoQuorumError once every group was asked. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    let failed: unknown;
    for (const lock of [...this.groups].reverse()) {
      await lock.release().catch((e: unknown) => (failed ??= e));
    }
    await this.#givenBack;
    if (failed !== undefined) throw failed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** @internal Every group's watchdog (as Lock.watch); the function it returns stops them all. */
  watch(interval: number, maxHold: number | undefined): () => void {
    const stops = this.groups.map((lock) => lock.watch(interval, maxHold));
    return () => stops.forEach((stop) => stop());
  }
}
