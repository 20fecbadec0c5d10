/**
 * node-redis 6 against what it changed from 5: a default command timeout of 5 s (it bounds a
 * command's time before it is written, not a queued wait's reply: checked here, since a wait cut
 * at 5 s would be counted as a node failure; and its per-command timer is turned off, as the
 * maintenance notices are, for what they cost each command), RESP3 by default (dlock asks for
 * RESP2), and the version in use.
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { RedisClient } from "@redis/client";
import { LockManager } from "../src/index.js";
import { start, stopAll, type Server } from "./servers.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let servers: Server[] = [];
before(async () => {
  servers = await start(1);
});
after(() => stopAll(servers));

/** How long each client waiting for `key` has waited, ms (DLOCK.WAITERS). */
async function waited(server: Server, key: string): Promise<number[]> {
  return ((await server.command("DLOCK.WAITERS", key)) as unknown[][]).map((w) => Number(w[2]));
}

test("a queued wait longer than node-redis 6's default command timeout is one wait", { timeout: 30_000 }, async () => {
  const locks = new LockManager([servers[0]!.url], { timeout: 500 });
  try {
    const held = await locks.acquire("long-wait", { ttl: 20_000 });
    const waiting = locks.acquire("long-wait", { ttl: 10_000, wait: 15_000 });
    await sleep(6_000); // past node-redis 6's default commandOptions.timeout (5 s)
    // The same wait all along: not cut at 5 s and sent again.
    const [ms] = await waited(servers[0]!, "long-wait");
    assert.ok(ms !== undefined && ms >= 5_500, `waited ${ms} ms`);
    await held.release();
    const next = await waiting;
    assert.ok((await next.token()) > (await held.token()));
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

test("dlock's commands carry no node-redis command timer, its connections no maintenance watch", async () => {
  // Each costs every command (a timer, a check): together a third of a command's client time
  // on node-redis 6 (docs/node.md). dlock bounds every call with its own timers.
  type Send = (this: unknown, args: unknown, options?: { timeout?: number }) => unknown;
  const proto = RedisClient.prototype as unknown as { sendCommand: Send };
  const original = proto.sendCommand;
  const seen: Array<{ timeout?: number } | undefined> = [];
  const clients = new Set<{ options?: { maintNotifications?: string } }>();
  proto.sendCommand = function (this: unknown, args, options) {
    seen.push(options);
    clients.add(this as { options?: { maintNotifications?: string } });
    return original.call(this, args, options);
  };
  const locks = new LockManager([servers[0]!.url], { timeout: 500 });
  try {
    const lock = await locks.acquire("timers", { ttl: 10_000 });
    await lock.release();
  } finally {
    proto.sendCommand = original;
    await locks.close();
  }
  assert.ok(seen.length >= 2, `${seen.length} commands seen`);
  for (const options of seen) assert.equal(options?.timeout, 0);
  for (const client of clients) assert.equal(client.options?.maintNotifications, "disabled");
});
