/**
 * A held lock: its fencing token, owner and validity; extend(), release() and the watchdog.
 */
import type { Granted } from "./driver.js";
import { LockLostError, NoQuorumError } from "./errors.js";
import type { Kind } from "./kind.js";
import { checkTtl, unitHint } from "./units.js";
import type { Calls } from "./calls.js";
import { now } from "./timing.js";

/** A held lock: its fencing token, owner and validity; extend() and release(). */
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

  /** Milliseconds the lock is still safe to use (0 once expired). */
  get validity(): number {
    return Math.max(0, this.#validUntil - now());
  }

  /** Aborted when the lock is lost (a watchdog extension failed) or maxHold passed. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get lost(): boolean {
    return this.#lost;
  }

  /** EXTEND on every node: the lock's validity starts afresh from `ttl` ms (default: the ttl it was taken with). */
  async extend(ttl: number = this.ttl): Promise<number> {
    const whole = checkTtl(ttl);
    if (this.#released) throw new LockLostError(this.resource);
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
      this.#lost = true;
      stopped = true;
      if (!this.#controller.signal.aborted) this.#controller.abort(reason);
    };
    const tick = async (): Promise<void> => {
      if (stopped) return;
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

