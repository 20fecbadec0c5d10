/**
 * A Redis Cluster as one quorum node (`redis+cluster://`): three masters and their replicas with
 * the module, made by `redis-cli --cluster create` as an operator does it. Locks go to the master
 * serving their key's slot, acknowledged by its replica (replicaAck "auto"); a cluster node and
 * two plain masters make one quorum.
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { keySlot } from "../src/transport/cluster.js";
import { CrossSlotSet, Lock, LockContendedError, LockLostError, LockManager, groups } from "../src/index.js";
import { freePort, Server, start, stopAll } from "./servers.js";

const CLUSTER_ARGS = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000", "--repl-diskless-sync-delay", "0"];

async function eventually(check: () => Promise<boolean>, what: string, within = 30_000): Promise<void> {
  const deadline = Date.now() + within;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A client port whose bus port (+10000) exists: folded into 20000-29999. */
async function clusterPort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = 20_000 + ((await freePort()) % 10_000);
    if (!taken.has(port)) {
      taken.add(port);
      return port;
    }
  }
}

describe("redis+cluster://", () => {
  const nodes: Server[] = [];
  let plain: Server[] = [];
  before(async () => {
    const taken = new Set<number>();
    for (let i = 0; i < 6; i++) {
      const server = new Server(await clusterPort(taken), { args: CLUSTER_ARGS });
      server.spawn();
      nodes.push(server);
    }
    for (const n of nodes) assert.ok(await n.ready(), `cluster node ${n.port} did not start`);
    execFileSync("redis-cli", ["--cluster", "create", ...nodes.map((n) => `127.0.0.1:${n.port}`), "--cluster-replicas", "1", "--cluster-yes"], { stdio: "pipe" });
    await eventually(async () => {
      for (const n of nodes) {
        const info = String(await n.command("CLUSTER", "INFO"));
        if (!info.includes("cluster_state:ok") || !info.includes("cluster_slots_ok:16384")) return false;
        const replication = String(await n.command("INFO", "replication"));
        if (replication.includes("role:slave") && !replication.includes("master_link_status:up")) return false;
        // Every node knows every shard's replica (gossip).
        const slots = (await n.command("CLUSTER", "SLOTS")) as unknown[][];
        if (slots.length !== 3 || slots.some((range) => range.length < 4)) return false;
      }
      return true;
    }, "the cluster");
    plain = await start(2);
  });
  after(() => {
    stopAll(nodes);
    stopAll(plain);
  });

  /** The cluster node holding `key`'s slot as master, and its replica. */
  async function holders(key: string): Promise<{ master: Server; replica: Server }> {
    const slot = keySlot(key);
    const ranges = (await nodes[0]!.command("CLUSTER", "SLOTS")) as Array<[string, string, [string, string], [string, string]]>;
    const range = ranges.find(([a, b]) => slot >= Number(a) && slot <= Number(b))!;
    const byPort = (port: string): Server => nodes.find((n) => String(n.port) === port)!;
    return { master: byPort(range[2][1]), replica: byPort(range[3][1]) };
  }

  test("key slots as Redis computes them", async () => {
    for (const key of ["orders:42", "{user1000}.following", "a{}b", "x{y}z{w}", "é"]) {
      assert.equal(keySlot(key), Number(await nodes[0]!.command("CLUSTER", "KEYSLOT", key)), key);
    }
  });

  test("locks on the master serving the key, acknowledged by its replica", async () => {
    const locks = new LockManager([`redis+cluster://127.0.0.1:${nodes[0]!.port}`], { timeout: 1_000, ackTimeout: 2_000 });
    try {
      for (const key of ["c:1", "c:2", "c:3", "c:4", "c:5", "c:6"]) {
        const lock = await locks.acquire(key, { ttl: 10_000 });
        const { master, replica } = await holders(key);
        assert.equal(((await master.command("DLOCK.STATUS", key)) as string[])[1], lock.owner, key);
        const [, onReplica] = (await replica.commands([["READONLY"], ["DLOCK.STATUS", key]])) as [unknown, string[]];
        assert.equal(onReplica[1], lock.owner, `${key} on the replica`);
        await lock.release();
      }
    } finally {
      await locks.close();
    }
  });

  test("a cluster and two masters make one quorum; queue waits hand over", async () => {
    const urls = [`redis+cluster://127.0.0.1:${nodes[1]!.port}`, ...plain.map((s) => s.url)];
    const locks = new LockManager(urls, { timeout: 1_000, ackTimeout: 2_000 });
    try {
      const held = await locks.acquire("mixed", { ttl: 10_000 });
      const heldToken = await held.token(); // before the release: its commit is owed (three nodes)
      const waiting = locks.acquire("mixed", { ttl: 10_000, wait: 5_000 });
      await new Promise((r) => setTimeout(r, 100));
      await held.release();
      const next = await waiting;
      assert.ok((await next.token()) > heldToken);
      // Held on the cluster too (committed there, or granted to the holder's wait still queued).
      const { master } = await holders("mixed");
      await eventually(async () => ((await master.command("DLOCK.STATUS", "mixed")) as string[])[1] === next.owner, "the hold on the cluster", 5_000);
      await next.release();
    } finally {
      await locks.close();
    }
  });

  test("a slot migrated under a held lock: ASK during the move, MOVED after it", async () => {
    const key = "migrating";
    const locks = new LockManager([`redis+cluster://127.0.0.1:${nodes[0]!.port}`], { timeout: 1_000, replicaAck: "off" });
    try {
      const lock = await locks.acquire(key, { ttl: 30_000 });
      const { master: source } = await holders(key);
      const ranges = (await nodes[0]!.command("CLUSTER", "SLOTS")) as Array<[string, string, [string, string]]>;
      const target = nodes.find((n) => String(n.port) === ranges.map((r) => r[2][1]).find((p) => p !== String(source.port)))!;
      const slot = String(keySlot(key));
      const [sourceId, targetId] = (await Promise.all([source.command("CLUSTER", "MYID"), target.command("CLUSTER", "MYID")])) as string[];
      await target.command("CLUSTER", "SETSLOT", slot, "IMPORTING", sourceId!);
      await source.command("CLUSTER", "SETSLOT", slot, "MIGRATING", targetId!);
      await source.command("MIGRATE", "127.0.0.1", String(target.port), "", "0", "5000", "KEYS", key);
      // The ASK window: the source no longer has the key, the target has it but does not own the slot.
      assert.ok((await lock.extend()) > 0);
      for (const r of ranges) await nodes.find((n) => String(n.port) === r[2][1])!.command("CLUSTER", "SETSLOT", slot, "NODE", targetId!);
      await eventually(async () => {
        for (const n of nodes) {
          const info = String(await n.command("CLUSTER", "INFO"));
          if (!info.includes("cluster_state:ok")) return false;
        }
        return (await holders(key)).master === target;
      }, "the slot announced");
      // The client's map still names the source: MOVED, the map read again, the target asked.
      assert.ok((await lock.extend()) > 0);
      assert.equal(((await target.command("DLOCK.STATUS", key)) as string[])[1], lock.owner);
      await lock.release();
      assert.equal(await target.command("DLOCK.STATUS", key), null);
    } finally {
      await locks.close();
    }
  });

  /** Cross-slot sets (docs/multi.md, "Redis Cluster"): three slot groups, two of them of two keys. */
  const KEYS = ["{xs-b}:2", "{xs-a}:1", "{xs-c}:1", "{xs-a}:2", "{xs-b}:1"];
  const setManager = (options: { extendInterval?: number } = {}): LockManager =>
    new LockManager([`redis+cluster://127.0.0.1:${nodes[0]!.port}`], { timeout: 1_000, ackTimeout: 2_000, ...options });
  const onMaster = async (key: string): Promise<string[] | null> => (await (await holders(key)).master.command("DLOCK.STATUS", key)) as string[] | null;
  const allFree = async (keys: readonly string[]): Promise<boolean> => {
    for (const key of keys) if ((await onMaster(key)) !== null) return false;
    return true;
  };
  const crossSlot = (held: Lock | CrossSlotSet): CrossSlotSet => {
    assert.ok(held instanceof CrossSlotSet);
    return held;
  };

  test("a cross-slot set is held whole, a token per slot group, and released whole", { timeout: 60_000 }, async () => {
    const locks = setManager();
    try {
      assert.equal(groups(KEYS).length, 3);
      const held = crossSlot(await locks.tryLockAll(KEYS, 10_000));
      assert.deepEqual(held.resources, KEYS);
      assert.deepEqual(held.groups.map((g) => g.resources), groups(KEYS)); // slot order
      const tokens = await held.tokens();
      assert.equal(tokens.length, KEYS.length);
      for (const [i, key] of KEYS.entries()) {
        const group = held.groups.find((g) => g.resources.includes(key))!;
        const view = (await onMaster(key))!;
        assert.equal(view[1], group.owner, key);
        assert.equal(String(view[view.indexOf("token") + 1]), tokens[i]!.toString(), key);
      }
      assert.equal(tokens[KEYS.indexOf("{xs-a}:1")], tokens[KEYS.indexOf("{xs-a}:2")]); // one group, one token
      await assert.rejects(held.token(), /a set across 3 slots has one token per slot group: use tokens\(\)/);
      assert.ok((await held.extend(5_000)) <= 5_000);
      await held.release();
      await held.release(); // a second call does nothing
      assert.ok(await allFree(KEYS));
      const oneSlot = await locks.tryLockAll(["{xs-a}:1", "{xs-a}:2"], 10_000); // one group: a Lock, as before
      assert.ok(oneSlot instanceof Lock);
      await oneSlot.release();
    } finally {
      await locks.close();
    }
  });

  test("a later slot group held by another fails the set and frees the earlier groups", { timeout: 60_000 }, async () => {
    const locks = setManager();
    const last = groups(KEYS).at(-1)![0]!;
    try {
      const blocker = await locks.acquire(last, { ttl: 10_000 });
      await assert.rejects(locks.tryLockAll(KEYS, 10_000), LockContendedError);
      assert.ok(await allFree(KEYS.filter((k) => k !== last)));
      await assert.rejects(locks.lockAll(KEYS, 10_000, { wait: 300 }), LockContendedError); // the one wait of the whole call
      assert.ok(await allFree(KEYS.filter((k) => k !== last)));
      await blocker.release();
      const held = crossSlot(await locks.lockAll(KEYS, 10_000, { wait: 2_000 }));
      await held.release();
      assert.ok(await allFree(KEYS));
    } finally {
      await locks.close();
    }
  });

  test("cross-slot sets in opposite orders never deadlock nor overlap", { timeout: 90_000 }, async () => {
    const keys = ["{xs-p}", "{xs-q}", "{xs-r}"];
    let inside = 0;
    let most = 0;
    let rounds = 0;
    const worker = async (order: string[]): Promise<void> => {
      const locks = setManager();
      try {
        for (let i = 0; i < 15; i++) {
          const held = await locks.lockAll(order, 5_000, { wait: 20_000 });
          most = Math.max(most, ++inside);
          await new Promise((r) => setTimeout(r, 5));
          inside--;
          rounds++;
          await held.release();
        }
      } finally {
        await locks.close();
      }
    };
    await Promise.all([keys, [...keys].reverse(), [...keys.slice(1), keys[0]!]].map(worker));
    assert.equal(rounds, 45);
    assert.equal(most, 1);
    assert.ok(await allFree(keys));
  });

  test("a slot group lost: extend rejects with LockLostError and the other groups are released", { timeout: 60_000 }, async () => {
    const locks = setManager();
    try {
      const held = crossSlot(await locks.tryLockAll(KEYS, 10_000));
      await held.tokens();
      const gone = groups(KEYS)[1]![0]!;
      await (await holders(gone)).master.command("DEL", gone);
      await assert.rejects(held.extend(), LockLostError);
      assert.ok(held.lost && held.signal.aborted);
      assert.ok(await allFree(KEYS));
      await held.release();
    } finally {
      await locks.close();
    }
  });

  test("a cross-slot set's watchdog sees a group lost and releases the others", { timeout: 60_000 }, async () => {
    const locks = setManager();
    try {
      const held = crossSlot(await locks.tryLockAll(KEYS, 2_000));
      await held.tokens();
      const stop = held.watch(50, undefined);
      try {
        const gone = groups(KEYS)[0]![0]!;
        await (await holders(gone)).master.command("DEL", gone);
        await eventually(async () => held.lost && (await allFree(KEYS)), "the loss seen and the others released", 10_000);
        assert.ok(held.signal.reason instanceof LockLostError);
      } finally {
        stop();
        await held.release().catch(() => undefined);
      }
    } finally {
      await locks.close();
    }
  });

  test("two seeds of one cluster are refused as one server counted twice", async () => {
    const [first, second] = [`redis+cluster://127.0.0.1:${nodes[0]!.port}`, `redis+cluster://127.0.0.1:${nodes[1]!.port}`];
    const locks = new LockManager([first, second], { timeout: 1_000, replicaAck: "off" });
    try {
      const error = await locks.acquire("twice", { ttl: 10_000 }).catch((e: unknown) => e);
      assert.ok(error instanceof RangeError, String(error));
      assert.ok(error.message.includes(`nodes ${first} and ${second} are the same server (run_id `), error.message);
    } finally {
      await locks.close();
    }
  });

  test("a replica as the seed still finds the masters", async () => {
    const { replica } = await holders("moved");
    const locks = new LockManager([`redis+cluster://127.0.0.1:${replica.port}`], { timeout: 1_000, ackTimeout: 2_000 });
    try {
      const lock = await locks.acquire("moved", { ttl: 10_000 });
      assert.ok((await lock.token()) > 0n);
      await lock.release();
    } finally {
      await locks.close();
    }
  });
});
