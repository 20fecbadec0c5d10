/**
 * Replica acknowledgement (client/src/transport/ack.rs): `WAIT replicas timeout` in the same
 * pipeline after each grant, extension and commit, so the write counts only once the asked
 * replicas have it, and a failover right after cannot promote a replica that never saw it. When
 * fewer acknowledge in time, the node's answer becomes a failure saying so, and the rounds treat
 * the node as one that did not grant.
 */
import { type Settings, TIMEOUT_RESOLUTION } from "../options.js";

/** How many replicas a write waits for, how long (ms), and whether on every node. */
export type Ack = NonNullable<Settings["ack"]>;

/** What a write to a node waits for: `ack` on every node, or (replicaAck "auto") only on the failover-managed ones (`replicated`: a cluster, a sentinel-managed master). */
export function ackFor(ack: Ack | undefined, replicated: boolean): Ack | undefined {
  return ack !== undefined && (ack.everywhere || replicated) ? ack : undefined;
}

/** The extra time (ms) a call may take for its acknowledgement: the server answers a blocked WAIT at its next tick. */
export function extraTime(ack: Ack | undefined): number {
  return ack === undefined ? 0 : ack.timeout + TIMEOUT_RESOLUTION;
}

/** What is written for `args`: itself, then the WAIT. */
export function withWait(args: string[], ack: Ack): string[][] {
  return [args, ["WAIT", String(ack.replicas), String(ack.timeout)]];
}

/** Why the reply (replies[0]) does not count: it wrote (a token, or 1) but fewer replicas than asked acknowledged; undefined when it counts. */
export function shortfall(replies: readonly unknown[], ack: Ack): string | undefined {
  const reply = replies[0];
  const wrote = typeof reply === "string" && /^\d+$/.test(reply) && BigInt(reply) > 0n;
  const acked = Number(replies[1] ?? 0);
  if (!wrote || acked >= ack.replicas) return undefined;
  return `written but only ${acked} of ${ack.replicas} replicas acknowledged within ${ack.timeout} ms`;
}
