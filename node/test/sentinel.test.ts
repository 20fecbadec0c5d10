/**
 * A Redis Sentinel deployment as one quorum node (`redis+sentinel://`): a master and a replica
 * with the module, three sentinels with a password of their own. The client asks the sentinels
 * for the master, checks it with ROLE, waits for the replica's acknowledgement of every write
 * (replicaAck "auto"), and follows a failover.
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { LockManager, NoQuorumError } from "../src/index.js";
import { freePort, start, stopAll, type Server } from "./servers.js";

const SERVICE = "locks";
const SENTINEL_PASSWORD = "sentinel-pw-7d1";

async function eventually(check: () => Promise<boolean>, what: string, within = 15_000): Promise<void> {
  const deadline = Date.now() + within;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

class Sentinel {
  readonly dir = mkdtempSync(join(tmpdir(), "dlock-node-sentinel-"));
  readonly process: ChildProcess;
  constructor(
    readonly port: number,
    masterPort: number,
  ) {
    const conf = join(this.dir, "sentinel.conf");
    writeFileSync(
      conf,
      [
        `port ${port}`,
        "bind 127.0.0.1",
        `dir ${this.dir}`,
        "logfile sentinel.log",
        `requirepass ${SENTINEL_PASSWORD}`,
        `sentinel sentinel-pass ${SENTINEL_PASSWORD}`,
        `sentinel monitor ${SERVICE} 127.0.0.1 ${masterPort} 2`,
        `sentinel down-after-milliseconds ${SERVICE} 1000`,
        `sentinel failover-timeout ${SERVICE} 3000`,
        "",
      ].join("\n"),
    );
    this.process = spawn(process.env["DLOCK_REDIS_SERVER"] ?? "redis-server", [conf, "--sentinel"], { stdio: "ignore" });
  }

  stop(): void {
    this.process.kill("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  }
}

describe("redis+sentinel://", () => {
  let data: Server[] = [];
  let sentinels: Sentinel[] = [];
  let url = "";
  const ask = async (port: number, ...args: string[]): Promise<unknown> => {
    const { createClient } = await import("@redis/client");
    const client = createClient({ RESP: 2, password: SENTINEL_PASSWORD, disableClientInfo: true, socket: { host: "127.0.0.1", port, reconnectStrategy: false } });
    client.on("error", () => {});
    await client.connect();
    try {
      return await client.sendCommand(args);
    } finally {
      client.destroy();
    }
  };
  const replicas = async (port: number): Promise<Array<Map<string, string>>> =>
    ((await ask(port, "SENTINEL", "REPLICAS", SERVICE)) as string[][]).map((r) => new Map(r.flatMap((v, i) => (i % 2 ? [] : [[v, r[i + 1]!] as [string, string]]))));

  before(async () => {
    data = await start(2, { args: ["--repl-diskless-sync-delay", "0"] });
    await data[1]!.command("REPLICAOF", "127.0.0.1", String(data[0]!.port));
    await eventually(async () => String(await data[1]!.command("INFO", "replication")).includes("master_link_status:up"), "replica link");
    const ports = [await freePort(), await freePort(), await freePort()];
    sentinels = ports.map((p) => new Sentinel(p, data[0]!.port));
    await eventually(async () => {
      for (const s of sentinels) {
        const seen = await replicas(s.port);
        if (!seen.some((r) => r.get("flags") === "slave" && r.get("master-link-status") === "ok")) return false;
      }
      return true;
    }, "sentinels see the replica");
    url = `redis+sentinel://${ports.map((p) => `127.0.0.1:${p}`).join(",")}/${SERVICE}`;
  });
  after(() => {
    for (const s of sentinels) s.stop();
    stopAll(data);
  });

  test("locks on the master the sentinels name, acknowledged by its replica", async () => {
    const locks = new LockManager([url], { timeout: 1_000, ackTimeout: 2_000, sentinelPassword: SENTINEL_PASSWORD });
    try {
      const lock = await locks.acquire("sentinel", { ttl: 10_000 });
      // replicaAck "auto" waited for the replica: the grant is there already.
      const onReplica = (await data[1]!.command("DLOCK.STATUS", "sentinel")) as string[];
      assert.equal(onReplica[1], lock.owner);
      await lock.release();
    } finally {
      await locks.close();
    }
  });

  test("a wrong sentinel password is named in NoQuorumError", async () => {
    const locks = new LockManager([url], { timeout: 500, sentinelPassword: "not-it" });
    try {
      const error = await locks.acquire("sentinel", { ttl: 10_000 }).catch((e: unknown) => e);
      assert.ok(error instanceof NoQuorumError, String(error));
      assert.match(error.failures[0]!.reason, /no sentinel names a master for "locks"/);
    } finally {
      await locks.close();
    }
  });

  test("after a failover the new master is found and tokens keep rising", async () => {
    const locks = new LockManager([url], { timeout: 1_000, ackTimeout: 2_000, sentinelPassword: SENTINEL_PASSWORD });
    try {
      const before = await locks.acquire("failover", { ttl: 10_000 });
      const first = await before.token();
      await before.release();
      await ask(sentinels[0]!.port, "SENTINEL", "FAILOVER", SERVICE);
      await eventually(async () => {
        const named = (await ask(sentinels[0]!.port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)) as string[];
        return named[1] === String(data[1]!.port) && String(await data[1]!.command("ROLE")).startsWith("master");
      }, "the failover");
      const next = await locks.acquire("failover", { ttl: 10_000, wait: 15_000 });
      const token = await next.token();
      assert.ok(token > first, `${token} > ${first}`);
      assert.equal(((await data[1]!.command("DLOCK.STATUS", "failover")) as string[])[1], next.owner);
      await next.release();
    } finally {
      await locks.close();
    }
  });

  test("the master the sentinels name, given directly too, is refused as one server counted twice", async () => {
    const named = (await ask(sentinels[0]!.port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)) as string[];
    const direct = `redis://127.0.0.1:${named[1]}`;
    const locks = new LockManager([url, direct], { timeout: 1_000, ackTimeout: 2_000, sentinelPassword: SENTINEL_PASSWORD });
    try {
      const error = await locks.acquire("twice", { ttl: 10_000 }).catch((e: unknown) => e);
      assert.ok(error instanceof RangeError, String(error));
      assert.ok(error.message.includes(`nodes ${url} and ${direct} are the same server (run_id `), error.message);
    } finally {
      await locks.close();
    }
  });
});
