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
import { LockManager } from "../src/index.js";
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
