/**
 * Many local waiters, few server waits (docs/waiting.md): a queued acquire waits on the nodes on a
 * connection of its own, so a thousand callers of one process waiting for one resource would hold
 * a thousand blocked connections on every node. A manager keeps at most one server-side wait per
 * resource; its other callers queue here, first come first served, and each takes its turn on the
 * nodes when the one before it is granted or gives up (the turn covers the wait, never the hold).
 */
import { later } from "./timing.js";

/** A caller in a resource's queue; the head has the turn. */
interface Waiter {
  came: boolean;
  wake: () => void;
}

/** A caller's place: whether the turn came in time, and how to leave (handing the turn on). */
export interface Turn {
  readonly came: boolean;
  leave(): void;
}

/** The resources a manager waits for on the nodes, each with its queue of local callers. */
export class LocalWaits {
  readonly #queues = new Map<string, Waiter[]>();

  /** Waits up to `within` ms (or until `signal` aborts) for `resource`'s turn. */
  async turn(resource: string, within: number, signal: AbortSignal | undefined): Promise<Turn> {
    const queue = this.#queues.get(resource) ?? [];
    this.#queues.set(resource, queue);
    let resolve: () => void = () => undefined;
    const woken = new Promise<void>((r) => (resolve = r));
    const me: Waiter = { came: false, wake: () => ((me.came = true), resolve()) };
    queue.push(me);
    if (queue.length === 1) me.wake();
    const onAbort = (): void => resolve();
    signal?.addEventListener("abort", onAbort, { once: true });
    const cancel = later(resolve, within); // however long: a wait may last years
    await woken;
    cancel();
    signal?.removeEventListener("abort", onAbort);
    return { came: me.came, leave: () => this.#leave(resource, queue, me) };
  }

  #leave(resource: string, queue: Waiter[], me: Waiter): void {
    const at = queue.indexOf(me);
    if (at < 0) return; // left already
    queue.splice(at, 1);
    if (at === 0) queue[0]?.wake();
    if (queue.length === 0) this.#queues.delete(resource);
  }
}
