/** The client against real redis-server nodes running the freshly built module. */
import "./timeout.js";
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  LockContendedError,
  LockLostError,
  LockManager,
  NoQuorumError,
  WrongKindError,
} from "../src/index.js";
import { start, stopAll, type Server } from "./servers.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe("three masters", () => {
  let servers: Server[] = [];
  let urls: string[] = [];
  let locks: LockManager;
  before(async () => {
    servers = await start(3);
    urls = servers.map((s) => s.url);
    locks = new LockManager(urls, { timeout: 500 });
  });
  after(async () => {
    await locks.close();
    stopAll(servers);
  });

  const everywhere = async (...args: string[]): Promise<unknown[]> => Promise.all(servers.map((s) => s.command(...args)));

  test("acquire, release: bigint tokens rise, the lock is free after", async () => {
    const a = await locks.acquire("plain", { ttl: 10_000 });
    const first = await a.token();
    assert.equal(typeof first, "bigint");
    assert.ok(a.validity > 9_000 && a.validity <= 10_000, String(a.validity));
    assert.match(a.owner, /^[0-9a-f]{32}:0$/); // 128 random bits in hex, and the round
    await a.release();
    await a.release(); // a second call does nothing
    const b = await locks.acquire("plain", { ttl: 10_000 });
    assert.ok((await b.token()) > first);
    await b.release();
    assert.deepEqual(await everywhere("DLOCK.STATUS", "plain"), [null, null, null]);
  });

  test("the token is committed on every granting node (two-phase fencing)", async () => {
    await servers[1]!.command("DLOCK.RAISE", "500");
    const lock = await locks.acquire("fenced", { ttl: 10_000 });
    const token = await lock.token(); // committed when read (test/commit.test.ts)
    assert.ok(token >= 501n);
    // The read returns once a majority committed: the third FENCE may still be on its way.
    const deadline = Date.now() + 5_000;
    let tokens: string[] = [];
    do {
      tokens = (await everywhere("DLOCK.STATUS", "fenced")).map((s) => String((s as string[])[3]));
      if (tokens.every((t) => t === token.toString())) break;
      await new Promise((r) => setTimeout(r, 20));
    } while (Date.now() < deadline);
    assert.deepEqual(tokens, [token.toString(), token.toString(), token.toString()]);
    await lock.release();
  });

  test("held by another: LockContendedError at once, or after wait", async () => {
    const held = await locks.acquire("busy", { ttl: 10_000 });
    await assert.rejects(locks.acquire("busy", { ttl: 1_000 }), LockContendedError);
    const started = Date.now();
    await assert.rejects(locks.acquire("busy", { ttl: 1_000, wait: 300 }), LockContendedError);
    assert.ok(Date.now() - started >= 250);
    await held.release();
    // The wait was withdrawn: no waiter is left behind on any node.
    assert.deepEqual(await everywhere("DLOCK.WAITERS", "busy"), [[], [], []]);
  });

  test("a queued waiter gets the lock as soon as the holder releases", async () => {
    const held = await locks.acquire("queue", { ttl: 10_000 });
    const heldToken = await held.token();
    const waiting = locks.acquire("queue", { ttl: 10_000, wait: 5_000 });
    await sleep(100);
    const released = Date.now();
    await held.release();
    const next = await waiting;
    assert.ok(Date.now() - released < 1_000);
    assert.ok((await next.token()) > heldToken);
    await next.release();
  });

  test("waiters are served in the order they came (one ticket per acquire)", async () => {
    const held = await locks.acquire("fifo", { ttl: 10_000 });
    const heldToken = await held.token();
    const order: string[] = [];
    const first = locks.acquire("fifo", { ttl: 10_000, wait: 5_000 }).then((l) => (order.push("first"), l));
    await sleep(50);
    const second = locks.acquire("fifo", { ttl: 10_000, wait: 5_000 }).then((l) => (order.push("second"), l));
    await sleep(50);
    await held.release();
    const a = await first;
    await sleep(100);
    assert.deepEqual(order, ["first"], "the second waits while the first holds");
    await a.release();
    const b = await second;
    assert.deepEqual(order, ["first", "second"]);
    const [ta, tb] = [await a.token(), await b.token()];
    assert.ok(heldToken < ta && ta < tb);
    await b.release();
  });

  test("a node closing a waiting connection does not crash the process; the wait goes on", async () => {
    const held = await locks.acquire("killed", { ttl: 10_000 });
    const heldToken = await held.token();
    const waiting = locks.acquire("killed", { ttl: 10_000, wait: 5_000 });
    await sleep(100);
    await servers[0]!.command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
    await sleep(100);
    await held.release();
    const next = await waiting;
    assert.ok((await next.token()) > heldToken);
    await next.release();
  });

  test("close() does not wait for waits still queued for a lock never released", async () => {
    const other = new LockManager(urls, { timeout: 200 });
    // Held by someone else on one node: the wait there stays queued once the other two made it held.
    await servers[2]!.command("DLOCK.ACQUIRE", "close", "someone-else", "10000");
    const held = await other.acquire("close", { ttl: 10_000, wait: 20_000 });
    assert.ok((await held.token()) > 0n);
    assert.equal(((await servers[2]!.command("DLOCK.WAITERS", "close")) as unknown[]).length, 1);
    const started = Date.now();
    await other.close();
    assert.ok(Date.now() - started < 2_000, `close took ${Date.now() - started} ms`);
    await everywhere("DLOCK.FORCERELEASE", "close");
  });

  test("waitMode retry: try, pause, try again until the holder is gone", async () => {
    const retrying = new LockManager(urls, { timeout: 500, waitMode: "retry" });
    try {
      const held = await locks.acquire("retry", { ttl: 10_000 });
      const heldToken = await held.token();
      setTimeout(() => void held.release(), 200);
      const next = await retrying.acquire("retry", { ttl: 10_000, wait: 5_000 });
      assert.ok((await next.token()) > heldToken);
      await next.release();
    } finally {
      await retrying.close();
    }
  });

  test("an AbortSignal cancels a wait and withdraws it from the queues", async () => {
    const held = await locks.acquire("abort", { ttl: 10_000 });
    const controller = new AbortController();
    const waiting = locks.acquire("abort", { ttl: 10_000, wait: 10_000, signal: controller.signal });
    await sleep(100);
    assert.ok((await everywhere("DLOCK.WAITERS", "abort")).every((w) => (w as unknown[]).length === 1));
    controller.abort();
    await assert.rejects(waiting, { name: "AbortError" });
    await sleep(50);
    assert.deepEqual(await everywhere("DLOCK.WAITERS", "abort"), [[], [], []]);
    await held.release();
  });

  test("extend renews the validity; a lost lock cannot be extended", async () => {
    const lock = await locks.acquire("extend", { ttl: 300 });
    await sleep(150);
    const left = await lock.extend(5_000);
    assert.ok(left > 4_000);
    await everywhere("DLOCK.FORCERELEASE", "extend");
    await assert.rejects(lock.extend(), LockLostError);
  });

  test("using: the watchdog keeps it past its ttl, then it is released", async () => {
    let token = 0n;
    const out = await locks.using("watched", { ttl: 300 }, async (lock) => {
      token = await lock.token();
      await sleep(800);
      assert.equal(lock.signal.aborted, false);
      assert.ok(lock.validity > 0);
      return 42;
    });
    assert.equal(out, 42);
    assert.ok(token > 0n);
    assert.deepEqual(await everywhere("DLOCK.STATUS", "watched"), [null, null, null]);
  });

  test("using: lock.signal aborts when the lock is lost, and using rejects with LockLostError", async () => {
    await assert.rejects(
      locks.using("lost", { ttl: 300 }, async (lock) => {
        await everywhere("DLOCK.FORCERELEASE", "lost");
        // The watchdog may have seen the loss already (a slow machine): an abort event is sent once.
        if (!lock.signal.aborted) await new Promise((resolve) => lock.signal.addEventListener("abort", resolve, { once: true }));
        assert.ok(lock.signal.reason instanceof LockLostError);
      }),
      LockLostError,
    );
  });

  test("using releases when the callback throws", async () => {
    await assert.rejects(
      locks.using("throws", { ttl: 5_000 }, () => {
        throw new Error("boom");
      }),
      /boom/,
    );
    assert.deepEqual(await everywhere("DLOCK.STATUS", "throws"), [null, null, null]);
  });

  test("await using releases at the end of the block", async () => {
    {
      await using lock = await locks.acquire("disposed", { ttl: 5_000 });
      assert.ok((await lock.token()) > 0n);
    }
    assert.deepEqual(await everywhere("DLOCK.STATUS", "disposed"), [null, null, null]);
  });

  test("shared holds coexist and exclude a writer; the wrong kind is WrongKindError", async () => {
    const r1 = await locks.acquire("rw", { ttl: 10_000, shared: true });
    const r2 = await locks.acquire("rw", { ttl: 10_000, shared: true });
    await assert.rejects(locks.acquire("rw", { ttl: 1_000 }), LockContendedError); // a writer waits for the readers
    await assert.rejects(locks.acquire("rw", { ttl: 1_000, limit: 2 }), WrongKindError);
    await r1.release();
    await r2.release();
    const w = await locks.acquire("rw", { ttl: 10_000 });
    await w.release();
  });

  test("a semaphore of 2 admits two holders and refuses a third", async () => {
    const a = await locks.acquire("sem", { ttl: 10_000, limit: 2 });
    const b = await locks.acquire("sem", { ttl: 10_000, limit: 2 });
    await assert.rejects(locks.acquire("sem", { ttl: 1_000, limit: 2 }), LockContendedError);
    const waiting = locks.acquire("sem", { ttl: 10_000, limit: 2, wait: 5_000 });
    await sleep(100);
    await a.release();
    const c = await waiting;
    assert.ok((await c.token()) > 0n);
    await b.release();
    await c.release();
  });

  test("bad arguments throw TypeError / RangeError before any node is asked", async () => {
    await assert.rejects(locks.acquire("x", { ttl: 0 }), RangeError);
    await assert.rejects(locks.acquire("x", { ttl: "10" as unknown as number }), TypeError);
    await assert.rejects(locks.acquire("", { ttl: 10 }), { name: "RangeError", message: "the resource name must not be empty" });
    await assert.rejects(locks.acquire(42 as unknown as string, { ttl: 10 }), TypeError);
    await assert.rejects(locks.acquire("x", { ttl: 2 }), { name: "RangeError", message: /^ttl must be at least 3 ms: a shorter one leaves no validity/ });
    await assert.rejects(locks.acquire("x", { ttl: 10, wait: 315_360_000_001 }), { name: "RangeError", message: /^wait must be at most 315360000000 ms/ });
    await assert.rejects(locks.campaign("e", "", { ttl: 1 }), /ttl must be at least 3 ms/);
    await assert.rejects(locks.acquire("x", { ttl: 10, limit: 0 }), RangeError);
    await assert.rejects(locks.acquire("x", { ttl: 10, limit: 1.5 }), TypeError);
    await assert.rejects(locks.acquire("x", { ttl: 10, shared: true, limit: 2 }), RangeError);
    await assert.rejects(locks.acquire("x", { ttl: 10, wait: -1 }), RangeError);
    assert.throws(() => new LockManager([]), RangeError);
    assert.throws(() => new LockManager("redis://h:1" as unknown as string[]), TypeError);
    assert.throws(() => new LockManager(["http://h:1"]), TypeError);
    assert.throws(() => new LockManager([urls[0]!, urls[0]!]), RangeError);
    assert.throws(() => new LockManager(urls, { timeout: -5 }), RangeError);
    assert.throws(() => new LockManager(urls, { timeout: 315_360_000_001 }), /timeout must be at most 315360000000 ms/);
    assert.throws(() => new LockManager(urls, { ackTimeout: 1e15 }), /ackTimeout must be at most/);
    assert.throws(() => new LockManager(urls, { driftFactor: 1 }), /driftFactor must be below 1/);
    assert.throws(() => new LockManager(urls, { waitMode: "poll" as "queue" }), RangeError);
    assert.throws(() => new LockManager(urls, { replicaAck: "some" as "auto" }), TypeError);
  });
});

describe("short waits", () => {
  // With the default 50 ms per-node timeout: a server answers a queued wait's end only at its
  // next tick (up to 100 ms late); that late answer, or the client's own time for the call
  // running out first, is the wait's end, never a node failure (conformance/replies.json).
  test("a held lock is LockContendedError at every wait from 0 up, on one node and on five", async () => {
    const servers = await start(5);
    try {
      for (const count of [1, 5]) {
        const urls = servers.slice(0, count).map((s) => s.url);
        const holder = new LockManager(urls);
        const locks = new LockManager(urls);
        const held = await holder.acquire("short", { ttl: 30_000 });
        for (const wait of [0, 50, 100, 0, 50, 100]) {
          await assert.rejects(locks.acquire("short", { ttl: 1_000, wait }), LockContendedError, `${count} nodes, wait ${wait}`);
        }
        await held.release();
        await Promise.all([holder.close(), locks.close()]);
      }
    } finally {
      stopAll(servers);
    }
  });
});

describe("nodes down", () => {
  test("NoQuorumError names the nodes that failed; a node back up is used again", async () => {
    const servers = await start(3);
    const locks = new LockManager(servers.map((s) => s.url), { timeout: 200 });
    try {
      servers[0]!.kill();
      servers[1]!.kill();
      await sleep(100);
      const error = await locks.acquire("down", { ttl: 5_000 }).catch((e: unknown) => e);
      assert.ok(error instanceof NoQuorumError, String(error));
      assert.equal(error.needed, 2);
      assert.equal(error.failures.length, 2);
      const queued = await locks.acquire("down", { ttl: 5_000, wait: 300 }).catch((e: unknown) => e);
      assert.ok(queued instanceof NoQuorumError, String(queued));
      servers[0]!.spawn();
      assert.ok(await servers[0]!.ready());
      const lock = await locks.acquire("down", { ttl: 5_000, wait: 8_000 });
      assert.ok((await lock.token()) > 0n);
      await lock.release().catch(() => undefined);
    } finally {
      await locks.close();
      stopAll(servers);
    }
  });
});
