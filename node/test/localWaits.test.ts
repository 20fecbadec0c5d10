/**
 * Many local waiters, few server waits (src/localWaits.ts): the callers of one manager waiting
 * for one resource keep one wait on each node, not one each, and are all served, one at a time.
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { LockContendedError, LockManager } from "../src/index.js";
import { type Server, start, stopAll } from "./servers.js";

let servers: Server[] = [];
before(async () => {
  servers = await start(3);
});
after(() => stopAll(servers));

/** A node's connections inside a server-side wait, and the owners queued for `key`. */
async function waits(server: Server, key: string): Promise<[number, number]> {
  const info = String(await server.command("INFO", "clients"));
  const blocked = Number(/blocked_clients:(\d+)/.exec(info)?.[1] ?? -1);
  const queue = (await server.command("DLOCK.WAITERS", key)) as unknown[];
  return [blocked, queue.length];
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

test("five hundred callers of one manager keep one wait per node and are all served", async () => {
  const urls = servers.map((s) => s.url);
  const holder = new LockManager(urls, { timeout: 500 });
  const locks = new LockManager(urls, { timeout: 500 });
  try {
    const held = await holder.acquire("r", { ttl: 10_000 });
    let inside = false;
    let served = 0;
    const callers = Array.from({ length: 500 }, async () => {
      const lock = await locks.acquire("r", { ttl: 10_000, wait: 60_000 });
      assert.ok(!inside, "two holders at once");
      inside = true;
      served += 1;
      await sleep(0);
      inside = false;
      await lock.release();
    });
    await sleep(500);
    for (const server of servers) assert.deepEqual(await waits(server, "r"), [1, 1], "one blocked connection and one queued owner per node");
    await held.release();
    await Promise.all(callers);
    assert.equal(served, 500);
  } finally {
    await holder.close();
    await locks.close();
  }
});

test("a caller whose wait runs out while queued in the process is told it was contended, on time", async () => {
  const urls = servers.map((s) => s.url);
  const holder = new LockManager(urls, { timeout: 500 });
  const locks = new LockManager(urls, { timeout: 500 });
  try {
    const held = await holder.acquire("q", { ttl: 10_000 });
    const first = locks.acquire("q", { ttl: 10_000, wait: 5_000 });
    await sleep(200);
    const started = performance.now();
    await assert.rejects(locks.acquire("q", { ttl: 10_000, wait: 300 }), LockContendedError);
    const took = performance.now() - started;
    // On time: well before the first's 5 s wait ends, with room for a loaded 2-core machine.
    assert.ok(took >= 295 && took < 2_500, `deadline 300 ms, answered after ${took} ms`);
    await held.release();
    await (await first).release();
  } finally {
    await holder.close();
    await locks.close();
  }
});

test("an aborted caller leaves the queue and the next one is served", async () => {
  const urls = servers.map((s) => s.url);
  const holder = new LockManager(urls, { timeout: 500 });
  const locks = new LockManager(urls, { timeout: 500 });
  try {
    const held = await holder.acquire("a", { ttl: 10_000 });
    const first = locks.acquire("a", { ttl: 10_000, wait: 5_000 });
    const abort = new AbortController();
    const second = locks.acquire("a", { ttl: 10_000, wait: 5_000, signal: abort.signal }).catch((e: unknown) => e);
    const third = locks.acquire("a", { ttl: 10_000, wait: 5_000 });
    await sleep(100);
    abort.abort();
    assert.ok((await second) instanceof Error, "the aborted caller rejects");
    await held.release();
    await (await first).release();
    await (await third).release();
  } finally {
    await holder.close();
    await locks.close();
  }
});

test("an already aborted signal queued behind another caller answers at once", async () => {
  const urls = servers.map((s) => s.url);
  const holder = new LockManager(urls, { timeout: 500 });
  const locks = new LockManager(urls, { timeout: 500 });
  try {
    const held = await holder.acquire("pre", { ttl: 10_000 });
    const first = locks.acquire("pre", { ttl: 10_000, wait: 5_000 });
    await sleep(100);
    const abort = new AbortController();
    abort.abort();
    const started = performance.now();
    await assert.rejects(locks.acquire("pre", { ttl: 10_000, wait: 2_500, signal: abort.signal }));
    assert.ok(performance.now() - started < 200, "an aborted signal waited its turn");
    await held.release();
    await (await first).release();
  } finally {
    await holder.close();
    await locks.close();
  }
});

test("two readers of one manager hold together though another process's writer queued between them", async () => {
  const urls = servers.map((s) => s.url);
  const [holder, writer, readers] = [0, 1, 2].map(() => new LockManager(urls, { timeout: 500 }));
  try {
    const held = await holder!.acquire("rw", { ttl: 10_000 });
    const first = readers!.acquire("rw", { ttl: 10_000, wait: 3_000, shared: true });
    await sleep(100);
    const second = readers!.acquire("rw", { ttl: 10_000, wait: 3_000, shared: true });
    await sleep(100);
    const written = writer!.acquire("rw", { ttl: 10_000, wait: 10_000 });
    await sleep(100);
    await held.release();
    const one = await first;
    const started = performance.now();
    const two = await second; // beside the first, ahead of the writer
    assert.ok(performance.now() - started < 1_000, "the second reader waited behind the writer");
    await two.release();
    await one.release();
    await (await written).release();
  } finally {
    for (const m of [holder, writer, readers]) await m!.close();
  }
});
