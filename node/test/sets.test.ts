/** Sets (lockAll / tryLockAll): several resources held all or nothing under one token, on three real nodes. */
import "./timeout.js";
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createClient } from "@redis/client";
import { CrossSlotSet, LockContendedError, LockLostError, LockManager, Lock } from "../src/index.js";
import { start, stopAll, type Server } from "./servers.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Without a Cluster node a set is one Lock. */
function one(held: Lock | CrossSlotSet): Lock {
  assert.ok(held instanceof Lock);
  return held;
}

test("bad sets are refused before anything is sent", { timeout: 10_000 }, async () => {
  const locks = new LockManager(["redis://127.0.0.1:1"]); // nothing listens: no I/O may happen
  try {
    await assert.rejects(locks.tryLockAll([], 1000), RangeError);
    await assert.rejects(locks.tryLockAll(["a", "b", "a"], 1000), RangeError);
    await assert.rejects(locks.lockAll(Array.from({ length: 17 }, (_, i) => `k${i}`), 1000), RangeError);
    await assert.rejects(locks.lockAll(["a", "b"], 1000, { modes: ["x"] }), RangeError);
    await assert.rejects(locks.lockAll(["a", "b"], 1000, { modes: "xp" }), RangeError);
    await assert.rejects(locks.tryLockAll("ab" as unknown as string[], 1000), TypeError);
  } finally {
    await locks.close();
  }
});

describe("sets on three masters", () => {
  let servers: Server[] = [];
  let locks: LockManager;
  before(async () => {
    servers = await start(3);
    locks = new LockManager(
      servers.map((s) => s.url),
      { timeout: 500 },
    );
  });
  after(async () => {
    await locks.close();
    stopAll(servers);
  });

  /** DLOCK.STATUS of `key` on every node, as a field map (null when free). */
  const status = async (key: string): Promise<(Record<string, string> | null)[]> =>
    Promise.all(
      servers.map(async (s) => {
        const reply = (await s.command("DLOCK.STATUS", key)) as string[] | null;
        if (reply === null) return null;
        const fields: Record<string, string> = {};
        for (let i = 0; i + 1 < reply.length; i += 2) fields[String(reply[i])] = String(reply[i + 1]);
        return fields;
      }),
    );
  const freeEverywhere = async (...keys: string[]): Promise<boolean> => {
    for (const key of keys) {
      if ((await status(key)).some((v) => v !== null)) return false;
      for (const s of servers) if (((await s.command("DLOCK.WAITERS", key)) as unknown[]).length > 0) return false;
    }
    return true;
  };
  const committedOn = async (key: string, token: bigint): Promise<number> => (await status(key)).filter((v) => v?.["token"] === token.toString()).length;

  test("a set is held whole under one token and released whole", { timeout: 30_000 }, async () => {
    const held = await locks.tryLockAll(["a", "b", "c"], 10_000);
    assert.deepEqual(held.resources, ["a", "b", "c"]);
    const token = await held.token(); // the commit: FENCEALL on the nodes that granted
    for (const key of ["a", "b", "c"]) assert.ok((await committedOn(key, token)) >= 2, key);
    await held.extend(5_000);
    assert.ok(held.validity > 4_000 && held.validity <= 5_000, String(held.validity));
    await held.release();
    assert.ok(await freeEverywhere("a", "b", "c"));
  });

  test("a member held by another fails the set and nothing is held on any node", { timeout: 30_000 }, async () => {
    const other = await locks.acquire("b", { ttl: 10_000 });
    await assert.rejects(locks.tryLockAll(["a", "b", "c"], 10_000), LockContendedError);
    assert.deepEqual(await status("a"), [null, null, null]);
    assert.deepEqual(await status("c"), [null, null, null]);
    assert.ok((await status("b")).every((v) => v?.["owner"] === other.owner));
    await other.release();
    assert.ok(await freeEverywhere("a", "b", "c"));
  });

  test("lockAll waits, holding nothing, and is granted when the blocker releases", { timeout: 30_000 }, async () => {
    const blocker = await locks.acquire("b", { ttl: 10_000 });
    const waiting = locks.lockAll(["a", "b"], 10_000, { wait: 10_000 });
    const deadline = Date.now() + 5_000;
    while (!(await Promise.all(servers.map(async (s) => ((await s.command("DLOCK.WAITERS", "b")) as unknown[]).length > 0))).every(Boolean)) {
      assert.ok(Date.now() < deadline, "the set queued on b");
      await sleep(5);
    }
    assert.deepEqual(await status("a"), [null, null, null]); // queued: holding nothing meanwhile
    await blocker.release();
    const held = await waiting;
    assert.deepEqual(held.resources, ["a", "b"]);
    assert.ok((await committedOn("a", await held.token())) >= 2);
    await held.release();
    assert.ok(await freeEverywhere("a", "b"));
  });

  test("sets in opposite orders never deadlock nor overlap", { timeout: 60_000 }, async () => {
    const inside: string[] = [];
    const overlaps: string[] = [];
    const done = [0, 0];
    const worker = async (index: number, order: string[]): Promise<void> => {
      for (let i = 0; i < 25; i++) {
        const held = await locks.lockAll(order, 5_000, { wait: 20_000 });
        await held.token();
        if (inside.length > 0) overlaps.push(`${order.join(",")} while ${inside.join(";")}`);
        inside.push(order.join(","));
        await sleep(1);
        inside.pop();
        await held.release();
        done[index]! += 1;
      }
    };
    await Promise.all([worker(0, ["a", "b"]), worker(1, ["b", "a"])]);
    assert.deepEqual(done, [25, 25]);
    assert.deepEqual(overlaps, []);
    assert.ok(await freeEverywhere("a", "b"));
  });

  test("a set missing a member on every node is lost at extend", { timeout: 30_000 }, async () => {
    const held = await locks.tryLockAll(["a", "b"], 10_000);
    await held.token();
    for (const s of servers) await s.command("DEL", "b");
    await assert.rejects(held.extend(), LockLostError);
    assert.deepEqual(await status("a"), [null, null, null]); // the nodes gave back the members still held
    await held.release();
  });

  test("the watchdog sees a set lost", { timeout: 30_000 }, async () => {
    const held = one(await locks.tryLockAll(["a", "b"], 1_000));
    await held.token();
    const stop = held.watch(50, undefined);
    try {
      for (const s of servers) await s.command("DEL", "a");
      const deadline = Date.now() + 5_000;
      while (!held.lost) {
        assert.ok(Date.now() < deadline, "the loss seen");
        await sleep(10);
      }
      assert.ok(held.signal.aborted && held.signal.reason instanceof LockLostError);
    } finally {
      stop();
      await held.release().catch(() => undefined);
    }
  });

  test("shared members are shared; a guarded write takes the set's token", { timeout: 30_000 }, async () => {
    const reader = one(await locks.tryLockAll(["acct", "ledger"], 10_000, { modes: ["x", "s"] }));
    const two = await locks.tryLockAll(["other", "ledger"], 10_000, { modes: "xs" });
    await assert.rejects(locks.tryLockAll(["ledger"], 10_000), LockContendedError); // exclusive: the readers hold it
    const data = createClient({ url: servers[0]!.url, RESP: 2, socket: { reconnectStrategy: false } });
    data.on("error", () => {});
    await data.connect();
    try {
      assert.equal(await reader.guarded(data, "gate", ["SET", "k", "v"]), "OK"); // reads (commits) the set's token first
      assert.equal(await servers[0]!.command("DLOCK.CHECK", "gate", (await reader.token()).toString()), "1");
    } finally {
      data.destroy();
    }
    await reader.release();
    await two.release();
    assert.ok(await freeEverywhere("acct", "ledger", "other"));
  });
});
