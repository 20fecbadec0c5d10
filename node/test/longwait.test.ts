/**
 * A wait longer than setTimeout holds (2^31 - 1 ms, 24.8 days; the nodes take up to ten years):
 * one setTimeout of it would fire at once, with a TimeoutOverflowWarning, and the acquire turned
 * into a reconnect loop (~20 a second: a new connection, RUNID, ACQUIRE, RELEASE each). It stays
 * one waiting request until it is aborted.
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { LockManager } from "../src/index.js";
import { type Server, start, stopAll } from "./servers.js";

let servers: Server[] = [];
before(async () => {
  servers = await start(1);
});
after(() => stopAll(servers));

const DAY = 86_400_000;

/** How often the server was asked a command so far (INFO commandstats). */
async function calls(server: Server, command: string): Promise<number> {
  const stats = String(await server.command("INFO", "commandstats"));
  return Number(new RegExp(`cmdstat_${command.replace(".", "\\.")}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
}

test("a wait of 30 days on a held lock stays one waiting request, without a warning, until aborted", async () => {
  const server = servers[0]!;
  const holder = new LockManager([server.url]);
  const waiter = new LockManager([server.url]);
  const warnings: string[] = [];
  const warned = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
  process.on("warning", warned);
  const abort = new AbortController();
  try {
    const held = await holder.acquire("month", { ttl: 60_000 });
    const [connected, asked] = [await calls(server, "dlock.runid"), await calls(server, "dlock.release")];
    const waiting = waiter.acquire("month", { ttl: 10_000, wait: 30 * DAY, signal: abort.signal }).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const connections = (await calls(server, "dlock.runid")) - connected; // each new connection says RUNID
    const withdrawn = (await calls(server, "dlock.release")) - asked; // each round given up, RELEASE
    assert.ok(connections <= 2 && withdrawn === 0, `in 1.5 s: ${connections} connections, ${withdrawn} rounds given up`);
    const cut = performance.now();
    abort.abort();
    assert.ok((await waiting) instanceof Error);
    assert.ok(performance.now() - cut < 2_000, "the abort was not heard at once");
    assert.deepEqual(warnings, []);
    await held.release();
  } finally {
    process.off("warning", warned);
    await waiter.close();
    await holder.close();
  }
});
