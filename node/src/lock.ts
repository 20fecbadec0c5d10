/**
 * A held lock: its fencing token, owner and validity; extend(), release() and the watchdog.
 */
import type { Granted } from "./driver.js";
import { LockLostError, NoQuorumError, StaleTokenError } from "./errors.js";
import type { Kind } from "./kind.js";
import { checkTtl, unitHint } from "./units.js";
import type { Calls } from "./calls.js";
import { now } from "./timing.js";

/** A connection to the data's Redis (with the module): node-redis's client, or anything with its `sendCommand`. */
export interface DataClient {
  sendCommand(args: string[]): Promise<unknown>;
}

/** A held lock: its fencing token, owner and validity; extend(), guarded() and release(). */
export class Lock {
  readonly token: bigint;
  readonly owner: string;
  #validUntil: number;
  #released = false;
  #lost = false;
  readonly #controller = new AbortController();
  /** Aborted on release: requests of the acquisition still out then know a grant they bring is stale. */
  readonly #stale: AbortController;

  readonly resource: string;
  readonly kind: Kind;

  /** @internal */
  constructor(
    private readonly calls: Calls,
    readonly ttl: number,
    granted: Granted,
  ) {
    this.resource = calls.resource;
    this.kind = calls.kind;
    this.token = granted.token;
    this.owner = granted.owner;
    this.#validUntil = now() + granted.validity;
    this.#stale = granted.stale;
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
   * Runs `command` (e.g. `["SET", "report", body]`) on `client` only if this lock's token is
   * still current at the key `gate`, raising the gate to it, in one step on that server
   * (DLOCK.GUARD); resolves to the command's reply. When a newer holder has written through the
   * gate, nothing changes, the lock is marked lost (`lost`, `signal`) and StaleTokenError (a
   * LockLostError) is thrown; a lock already known lost throws LockLostError and sends nothing.
   * Other errors are node-redis's.
   */
  async guarded(client: DataClient, gate: string, command: string[]): Promise<unknown> {
    if (this.#lost) throw new LockLostError(this.resource);
    try {
      return await client.sendCommand(["DLOCK.GUARD", gate, this.token.toString(), ...command]);
    } catch (e) {
      if (!(e instanceof Error) || !e.message.startsWith("STALE")) throw e;
      const stale = new StaleTokenError(this.resource, gate, this.token);
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
    const whole = checkTtl(ttl);
    if (this.#released || this.#lost) throw new LockLostError(this.resource);
    const needed = this.calls.backend.needed(this.kind);
    const extended = await this.calls.extend(this.owner, whole);
    if (typeof extended === "number") {
      this.#validUntil = now() + extended;
      return extended;
    }
    if (extended.done + extended.refused < needed) throw new NoQuorumError(this.resource, needed, extended.unreachable);
    throw new LockLostError(this.resource, unitHint(whole));
  }

  /** RELEASE on every node (a second call does nothing). */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    this.#stale.abort();
    const needed = this.calls.backend.needed(this.kind);
    const t = await this.calls.release(this.owner);
    if (t.done + t.refused < needed) throw new NoQuorumError(this.resource, needed, t.unreachable);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** @internal The watchdog of `using`: extends every `interval` ms; the stop function. */
  watch(interval: number, maxHold: number | undefined): () => void {
    const started = now();
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const lose = (reason: Error): void => {
      stopped = true;
      this.#lose(reason);
    };
    const tick = async (): Promise<void> => {
      if (stopped || this.#lost) return; // a stale guarded write ends the watchdog too
      if (maxHold !== undefined && now() - started >= maxHold) {
        stopped = true;
        this.#controller.abort(new LockLostError(this.resource, unitHint(this.ttl)));
        return;
      }
      try {
        await this.extend();
      } catch (e) {
        if (stopped) return; // stopped meanwhile: released, or about to be
        if (e instanceof LockLostError || this.validity <= 0) {
          lose(e instanceof Error ? e : new LockLostError(this.resource, unitHint(this.ttl)));
          return;
        }
      }
      if (!stopped) timer = setTimeout(() => void tick(), interval);
    };
    timer = setTimeout(() => void tick(), interval);
    let capTimer: NodeJS.Timeout | undefined;
    if (maxHold !== undefined) capTimer = setTimeout(() => void tick(), maxHold);
    return () => {
      stopped = true;
      clearTimeout(timer);
      clearTimeout(capTimer);
    };
  }
}

