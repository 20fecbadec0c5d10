/**
 * The commit a no-wait hold owes, paid when its token is first read (commit.ts, lock.ts token();
 * docs/node.md "Reading the token (changed)"), against three real masters: FENCE calls counted
 * with INFO commandstats, the token compared with what the nodes store (DLOCK.STATUS).
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { createClient } from "@redis/client";
import { type Lock, LockLostError, LockManager } from "../src/index.js";
import { start, stopAll, type Server } from "./servers.js";

const BOUND = { timeout: 20_000 };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function eventually(check: () => Promise<boolean>, what: string, within = 5_000): Promise<void> {
  const deadline = Date.now() + within;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** DLOCK.FENCE calls `server` counted since the last CONFIG RESETSTAT. */
async function fenceCalls(server: Server): Promise<number> {
  const info = String(await server.command("INFO", "commandstats"));
  return Number(/cmdstat_dlock\.fence:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

/** The token each node stores for `resource` (undefined: not held there). */
async function stored(servers: readonly Server[], resource: string): Promise<Array<string | undefined>> {
  return Promise.all(servers.map(async (s) => ((await s.command("DLOCK.STATUS", resource)) as string[] | null)?.[3]));
}

/** A listener on the lock's loss signal: how many times it was called. */
function lossListener(lock: Lock): { calls: number } {
  const told = { calls: 0 };
  lock.signal.addEventListener("abort", () => (told.calls += 1));
  return told;
}

describe("three masters: a no-wait hold commits its token when it is read", () => {
  let servers: Server[] = [];
  let data: Server;
  let locks: LockManager;
  const fences = async (): Promise<number> => (await Promise.all(servers.map(fenceCalls))).reduce((a, b) => a + b, 0);

  before(async () => {
    [data, ...servers] = (await start(4)) as [Server, ...Server[]];
    locks = new LockManager(
      servers.map((s) => s.url),
      { timeout: 500 },
    );
  });
  after(async () => {
    await locks.close();
    stopAll([data, ...servers]);
  });
  beforeEach(async () => {
    await Promise.all(servers.map((s) => s.command("CONFIG", "RESETSTAT")));
  });

  test("acquire without wait, then release, without reading the token: no FENCE", BOUND, async () => {
    const lock = await locks.acquire("unread", { ttl: 10_000 });
    assert.equal(lock.lost, false);
    await lock.release();
    assert.equal(await fences(), 0);
    assert.deepEqual(await stored(servers, "unread"), [undefined, undefined, undefined]);
  });

  test("reading sends one FENCE round, shared by concurrent and later readers", BOUND, async () => {
    const lock = await locks.acquire("shared-read", { ttl: 10_000 });
    assert.equal(await fences(), 0, "no FENCE before the token is read");
    const [a, b] = await Promise.all([lock.token(), lock.token()]);
    assert.equal(a, b);
    assert.equal(await lock.token(), a, "a later read: the remembered token");
    // Every node granted: one FENCE to each, whichever reader asked and however often.
    await eventually(async () => (await fences()) === 3, "the FENCE round's three calls");
    await lock.token();
    await sleep(100);
    assert.equal(await fences(), 3, "one round, not one per read");
    await lock.release();
  });

  test("the token read is the one the nodes store, committed on a majority", BOUND, async () => {
    await servers[2]!.command("DLOCK.RAISE", "9000"); // the largest grant comes from this node
    const lock = await locks.acquire("stored", { ttl: 10_000 });
    const before = await stored(servers, "stored");
    assert.ok(before.filter((t) => t !== undefined).length === 3, "granted everywhere");
    const token = await lock.token();
    assert.ok(token > 9000n, String(token));
    assert.equal(token, before.map((t) => BigInt(t!)).reduce((x, y) => (x > y ? x : y)), "the largest grant");
    const committed = (await stored(servers, "stored")).filter((t) => t === token.toString()).length;
    assert.ok(committed >= 2, `committed on ${committed} nodes`);
    await eventually(async () => (await stored(servers, "stored")).every((t) => t === token.toString()), "the commit on every node that granted");
    await lock.release();
  });

  test("the validity is counted afresh from the commit round", BOUND, async () => {
    const lock = await locks.acquire("rebased", { ttl: 2_000 });
    await sleep(600);
    assert.ok(lock.validity < 1_500, String(lock.validity));
    await lock.token();
    assert.ok(lock.validity > 1_800, `validity ${lock.validity} after the commit`);
    const ttls = await Promise.all(servers.map(async (s) => Number(await s.command("PTTL", "rebased"))));
    assert.ok(ttls.every((t) => t > 1_800), `the FENCE set the TTL afresh: ${ttls.join(", ")}`);
    await lock.release();
  });

  test("a commit that fails: LockLostError, the lock lost, and a second read sends nothing", BOUND, async () => {
    const lock = await locks.acquire("failing", { ttl: 10_000 });
    const told = lossListener(lock);
    await servers[0]!.command("DEL", "failing");
    await servers[1]!.command("DEL", "failing");
    await assert.rejects(lock.token(), LockLostError);
    assert.ok(lock.lost && lock.signal.aborted && lock.validity === 0);
    assert.ok(lock.signal.reason instanceof LockLostError);
    assert.equal(told.calls, 1, "the loss listener called once");
    await eventually(async () => (await fences()) === 3, "the one FENCE round");
    await assert.rejects(lock.token(), LockLostError);
    await sleep(100);
    assert.equal(await fences(), 3, "no FENCE for the second read");
    assert.equal(told.calls, 1);
    // The node that committed is given the hold back at once, not at the end of the TTL.
    await eventually(async () => (await stored(servers, "failing")).every((t) => t === undefined), "the lost hold given back", 2_000);
    await lock.release();
  });

  test("a commit and an extension at once: the client's validity never exceeds the TTL the nodes hold", BOUND, async () => {
    // Node 0 is taken by another owner: the hold is on nodes 1 and 2, and both the commit and the
    // extension are decided by node 2's replies, which come back together. Each must be applied
    // in the order the nodes applied it: the lease's writes go one at a time.
    for (let round = 0; round < 10; round++) {
      const resource = `raced${round}`;
      assert.notEqual(await servers[0]!.command("DLOCK.ACQUIRE", resource, "someone-else", "10000"), null);
      const lock = await locks.acquire(resource, { ttl: 10_000 });
      const [token, extended] = await Promise.all([lock.token(), lock.extend(500)]);
      assert.ok(token > 0n && extended <= 500);
      const ttls = await Promise.all(servers.slice(1).map(async (s) => Number(await s.command("PTTL", resource))));
      const validity = lock.validity; // read after the nodes' TTL: no later than theirs by the time it took
      assert.ok(validity <= Math.min(...ttls) + 50, `round ${round}: the client's validity ${validity} ms, the nodes hold ${ttls.join(", ")} ms`);
      await lock.release();
    }
  });

  test("validity over when read: LockLostError, the lock lost, no FENCE", BOUND, async () => {
    const lock = await locks.acquire("expired", { ttl: 100 });
    const told = lossListener(lock);
    await sleep(200);
    await assert.rejects(lock.token(), LockLostError);
    assert.ok(lock.lost && told.calls === 1);
    assert.equal(await fences(), 0);
  });

  test("released before the token was read: LockLostError, no FENCE", BOUND, async () => {
    const lock = await locks.acquire("released", { ttl: 10_000 });
    await lock.release();
    await assert.rejects(lock.token(), LockLostError);
    assert.equal(await fences(), 0);
  });

  test("a read started before release() keeps its commit's outcome: the committed token", BOUND, async () => {
    const lock = await locks.acquire("read-then-released", { ttl: 10_000 });
    const reading = lock.token(); // its FENCE goes out before the RELEASE
    const releasing = lock.release();
    const token = await reading;
    await releasing;
    assert.equal(await lock.token(), token, "later reads: the remembered token");
    assert.equal(lock.lost, false);
    assert.equal(await fences(), 3);
    assert.deepEqual(await stored(servers, "read-then-released"), [undefined, undefined, undefined], "released");
  });

  test("guarded() on an uncommitted hold commits first, and writes under the committed token", BOUND, async () => {
    const client = createClient({ url: data.url, RESP: 2, socket: { reconnectStrategy: false } });
    client.on("error", () => {});
    await client.connect();
    try {
      const lock = await locks.acquire("gated", { ttl: 10_000 });
      assert.equal(await fences(), 0);
      assert.equal(await lock.guarded(client, "gated:gate", ["SET", "gated:data", "v"]), "OK");
      assert.ok((await fences()) >= 2, "committed before the write");
      const token = await lock.token();
      assert.equal(await client.get("gated:data"), "v");
      const committed = (await stored(servers, "gated")).filter((t) => t === token.toString()).length;
      assert.ok(committed >= 2, `the gate's token is committed on ${committed} nodes`);
      await lock.release();
    } finally {
      client.destroy();
    }
  });

  test("a queued acquire commits while acquiring; reading the token sends nothing more", BOUND, async () => {
    const lock = await locks.acquire("queued", { ttl: 10_000, wait: 1_000 });
    // Held once a quorum committed: the FENCE went to the nodes that had granted by then.
    const sent = await fences();
    assert.ok(sent >= 2, `${sent} FENCE calls while acquiring`);
    await sleep(100);
    const settled = await fences();
    const token = await lock.token();
    await sleep(100);
    assert.equal(await fences(), settled, "reading the token sends no FENCE");
    const committed = (await stored(servers, "queued")).filter((t) => t === token.toString()).length;
    assert.ok(committed >= 2, `committed on ${committed} nodes`);
    await lock.release();
  });

  test("waitMode retry: the hold's commit is owed too; a campaign commits its epoch before it leads", BOUND, async () => {
    const retrying = new LockManager(
      servers.map((s) => s.url),
      { timeout: 500, waitMode: "retry" },
    );
    try {
      const lock = await retrying.acquire("retried", { ttl: 10_000, wait: 1_000 });
      assert.equal(await fences(), 0);
      await lock.token();
      assert.ok((await fences()) >= 2);
      await lock.release();
      const leading = await retrying.campaign("elected", "v", { ttl: 10_000 });
      const committed = (await stored(servers, "elected")).filter((t) => t === leading.epoch.toString()).length;
      assert.ok(committed >= 2, `the epoch is committed on ${committed} nodes`);
      await leading.resign();
    } finally {
      await retrying.close();
    }
  });
});

describe("one master: nothing to commit", () => {
  let servers: Server[] = [];
  before(async () => {
    servers = await start(1);
  });
  after(() => stopAll(servers));

  test("the node's token at once, no FENCE, readable after release", BOUND, async () => {
    const locks = new LockManager([servers[0]!.url], { timeout: 500 });
    try {
      await servers[0]!.command("CONFIG", "RESETSTAT");
      const lock = await locks.acquire("single", { ttl: 10_000 });
      const token = await lock.token();
      assert.deepEqual(await stored(servers, "single"), [token.toString()]);
      await lock.release();
      assert.equal(await lock.token(), token);
      assert.equal(await fenceCalls(servers[0]!), 0);
    } finally {
      await locks.close();
    }
  });
});
