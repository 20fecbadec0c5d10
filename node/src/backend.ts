/**
 * What a manager and the locks it hands out share (client/src/backend.rs): the nodes (the
 * transport: transport/nodes.ts), the options, the work left running in the background, the
 * retry pause and validity.
 */
import { type Kind, quorum } from "./kind.js";
import { type Settings } from "./options.js";
import { later, now, validity } from "./timing.js";
import type { Nodes } from "./transport/nodes.js";

/**
 * Sleeps `ms`, cut short when one of `signals` aborts: true when the time ran out, false when cut
 * short. Its timer and listeners go with it either way (a watchdog's pause must not keep a
 * released lock's process alive).
 */
export function sleepUnless(ms: number, signals: readonly AbortSignal[]): Promise<boolean> {
  if (signals.some((s) => s.aborted)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (slept: boolean): void => {
      cancelTimer();
      for (const s of signals) s.removeEventListener("abort", cut);
      resolve(slept);
    };
    const cut = (): void => done(false);
    const cancelTimer = later(() => done(true), ms); // a long TTL's renewal may be weeks away
    for (const s of signals) s.addEventListener("abort", cut, { once: true });
  });
}

/** The nodes, the settings, and the work left running. */
export class Backend {
  readonly needed: (kind: Kind) => number;
  readonly background = new Set<Promise<unknown>>();
  /** Aborted when the manager closes: what runs until stopped (an observer) stops then. */
  readonly closing = new AbortController();

  constructor(
    readonly nodes: Nodes,
    readonly opts: Settings,
  ) {
    this.needed = (kind) => quorum(nodes.length, kind);
  }

  /** Keeps a background promise until it settles (close() waits for them). */
  spawn(work: Promise<unknown>): void {
    const p = work.catch(() => undefined);
    this.background.add(p);
    void p.finally(() => this.background.delete(p));
  }

  retryPause(): number {
    return this.opts.retryDelay + Math.random() * this.opts.retryJitter;
  }

  validity(ttl: number, since: number): number | undefined {
    return validity(ttl, now() - since, this.opts.drift);
  }
}
