/**
 * node-redis 6 against what it changed from 5: a default per-command timeout of 5 s (which would
 * cut a queued wait short and count it as a node failure), RESP3 by default (dlock speaks RESP2),
 * and the one copy an application on node-redis 6 shares with dlock.
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { LockManager } from "../src/index.js";
import { start, stopAll, type Server } from "./servers.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let servers: Server[] = [];
before(async () => {
  servers = await start(1);
});
after(() => stopAll(servers));

/** DLOCK.ACQUIRE calls a server has answered (INFO commandstats). */
async function acquires(server: Server): Promise<number> {
  const stats = String(await server.command("INFO", "commandstats"));
  return Number(/cmdstat_dlock\.acquire:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

test("a queued wait longer than node-redis 6's default command timeout is one wait", { timeout: 30_000 }, async () => {
  const locks = new LockManager([servers[0]!.url], { timeout: 500 });
  try {
    const held = await locks.acquire("long-wait", { ttl: 20_000 });
    const before = await acquires(servers[0]!);
    const waiting = locks.acquire("long-wait", { ttl: 10_000, wait: 15_000 });
    await sleep(6_000); // past node-redis 6's default commandOptions.timeout (5 s)
    await held.release();
    const next = await waiting;
    assert.ok(next.token > held.token);
    assert.equal((await acquires(servers[0]!)) - before, 1, "the wait was cut and sent again");
    await next.release();
  } finally {
    await locks.close();
  }
});

test("the @redis/client in use is node-redis 6, and dlock's connections speak RESP2", async () => {
  const require = createRequire(import.meta.url);
  const pkg = JSON.parse(readFileSync(join(require.resolve("@redis/client"), "../../package.json"), "utf8")) as { version: string };
  assert.match(pkg.version, /^6\./);
  const locks = new LockManager([servers[0]!.url], { timeout: 500 });
  try {
    const lock = await locks.acquire("resp", { ttl: 10_000 });
    const clients = String(await servers[0]!.command("CLIENT", "LIST")).trim().split("\n");
    assert.ok(clients.length >= 2, clients.join("\n"));
    for (const client of clients) assert.match(client, / resp=2( |$)/, client);
    await lock.release();
  } finally {
    await locks.close();
  }
});
