/**
 * Leader election against real nodes (docs/election.md; the Rust twin is client/tests/election.rs):
 * campaign, leader, proclaim, resign, observe, the lease-loss contract (a frozen node: lost at the
 * renew deadline, before the lease ends; a refused extension: lost at once; no extension after
 * resign), and bad input refused before any node is asked; on 1 and 5 masters.
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type Leader, type Observed, type Observer, LockManager, NoQuorumError, WrongKindError } from "../src/index.js";
import { freePort, start, stopAll, type Server } from "./servers.js";

const LEASE = 1500;
const BOUND = { timeout: 20_000 };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Whether the module on `server` has DLOCK.OBSERVE (it may predate it: those tests are then skipped). */
async function observes(server: Server): Promise<boolean> {
  const info = (await server.command("COMMAND", "INFO", "dlock.observe")) as unknown[];
  return Array.isArray(info) && info[0] !== null && info[0] !== undefined;
}

/** Reads an observer with time limits, keeping a read that timed out for the next call (an iterator's next() cannot be taken back). */
class Reader {
  #pending: Promise<IteratorResult<Observed, undefined>> | undefined;
  constructor(readonly observer: Observer) {}

  async next(within: number): Promise<Observed | "done" | "nothing"> {
    this.#pending ??= this.observer.next();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"nothing">((resolve) => (timer = setTimeout(() => resolve("nothing"), within)));
    const got = await Promise.race([this.#pending, late]);
    clearTimeout(timer);
    if (got === "nothing") return got;
    this.#pending = undefined;
    return got.done ? "done" : got.value;
  }

  async leader(within = 5_000): Promise<Leader | null> {
    const got = await this.next(within);
    assert.ok(got !== "done" && got !== "nothing" && !(got instanceof Error), `a leader or none, got ${String(got)}`);
    return got;
  }
}

for (const n of [1, 5]) {
  describe(`${n === 1 ? "one master" : "five masters"}`, () => {
    let servers: Server[] = [];
    let locks: LockManager;
    let other: LockManager;
    before(async () => {
      servers = await start(n);
      locks = new LockManager(servers.map((s) => s.url), { timeout: 500 });
      other = new LockManager(servers.map((s) => s.url), { timeout: 500 });
    });
    after(async () => {
      await Promise.all([locks.close(), other.close()]);
      stopAll(servers);
    });

    test("campaign, resign: the waiting candidate is elected at once, with a larger epoch", BOUND, async () => {
      assert.equal(await locks.leader("jobs"), null, "nobody leads yet");
      const first = await locks.campaign("jobs", "10.0.0.1:80", { ttl: LEASE });
      assert.deepEqual(await locks.leader("jobs"), { id: first.id, value: "10.0.0.1:80", epoch: first.epoch });
      assert.match(first.id, /^[0-9a-f]{32}:\d+$/);
      let settled = false;
      const next = other.campaign("jobs", "10.0.0.2:80", { ttl: LEASE }).finally(() => (settled = true));
      await sleep(300);
      assert.equal(settled, false, "the second candidate waits while the first leads");
      const resigned = performance.now();
      await first.resign();
      const second = await next;
      assert.ok(performance.now() - resigned < 1000, `handed over at once: ${performance.now() - resigned} ms`);
      assert.ok(second.epoch > first.epoch, "epochs rise with every leader");
      assert.deepEqual(await locks.leader("jobs"), { id: second.id, value: "10.0.0.2:80", epoch: second.epoch });
      await second.resign();
      await second.resign(); // a second call does nothing
      assert.equal(await locks.leader("jobs"), null);
    });

    test("proclaim keeps the epoch, and the watchdog extends under the new value", BOUND, async () => {
      const leading = await locks.campaign("svc", "v1", { ttl: LEASE });
      const epoch = leading.epoch;
      await leading.proclaim("v2 with spaces");
      assert.equal(leading.value, "v2 with spaces");
      assert.deepEqual(await locks.leader("svc"), { id: leading.id, value: "v2 with spaces", epoch });
      await sleep(2 * LEASE);
      assert.equal(leading.lost, false, "the watchdog still extends under the new value");
      assert.equal(leading.signal.aborted, false);
      assert.equal((await locks.leader("svc"))?.value, "v2 with spaces");
      await assert.rejects(leading.proclaim("x".repeat(201)), RangeError);
      assert.equal(leading.value, "v2 with spaces", "a refused value changes nothing");
      await leading.proclaim("");
      assert.deepEqual(await locks.leader("svc"), { id: leading.id, value: "", epoch });
      await leading.resign();
      assert.equal(await locks.leader("svc"), null);
    });

    test("an aborted campaign is withdrawn from the queues and rejects with the signal's reason", BOUND, async () => {
      const first = await locks.campaign("abort", "a", { ttl: LEASE });
      const stop = new AbortController();
      const waiting = other.campaign("abort", "b", { ttl: LEASE, signal: stop.signal });
      await sleep(200);
      stop.abort();
      await assert.rejects(waiting, { name: "AbortError" });
      await first.resign();
      await sleep(200);
      assert.equal(await locks.leader("abort"), null, "the withdrawn candidate was not elected");
    });

    test("a shared lock or a semaphore is no election: WrongKindError", BOUND, async () => {
      const shared = await locks.acquire("readers", { ttl: 10_000, shared: true });
      await assert.rejects(locks.leader("readers"), WrongKindError);
      await shared.release();
      const permit = await locks.acquire("permits", { ttl: 10_000, limit: 2 });
      await assert.rejects(locks.leader("permits"), WrongKindError);
      await assert.rejects(locks.campaign("permits", "v", { ttl: LEASE }), WrongKindError);
      await permit.release();
    });

    test("observe: the leader first, then each change once and in order", BOUND, async (t) => {
      if (!(await observes(servers[0]!))) return t.skip("the module has no DLOCK.OBSERVE yet");
      const a = await locks.campaign("obs", "a1", { ttl: LEASE });
      const reader = new Reader(other.observe("obs"));
      assert.deepEqual(await reader.leader(), { id: a.id, value: "a1", epoch: a.epoch }, "the leader when it observes first");
      await a.proclaim("a2");
      assert.deepEqual(await reader.leader(), { id: a.id, value: "a2", epoch: a.epoch }, "a proclamation keeps the epoch");
      await a.resign();
      assert.equal(await reader.leader(), null, "nobody after a resignation");
      const b = await locks.campaign("obs", "b1", { ttl: LEASE });
      assert.deepEqual(await reader.leader(), { id: b.id, value: "b1", epoch: b.epoch }, "the next leader");
      assert.ok(b.epoch > a.epoch);
      const queued = other.campaign("obs", "c1", { ttl: LEASE });
      await sleep(300);
      await b.resign();
      let seen = await reader.leader();
      if (seen === null) {
        assert.ok(n > 1, "one node hands over in one step");
        seen = await reader.leader(); // several: nobody while the new grant is committed
      }
      const c = await queued;
      assert.deepEqual(seen, { id: c.id, value: "c1", epoch: c.epoch }, "the queued candidate, handed over");
      assert.ok(c.epoch > b.epoch);
      await c.resign();
      assert.equal(await reader.leader(), null, "resigned with nobody queued");
      assert.equal(await reader.next(500), "nothing", "each change once");
      await reader.observer.return();
      assert.equal(await reader.next(1000), "done", "ended by return()");
    });

    test("observe: a takeover is one leader event, with the committed epoch (5 times)", BOUND, async (t) => {
      if (!(await observes(servers[0]!))) return t.skip("the module has no DLOCK.OBSERVE yet");
      const reader = new Reader(other.observe("takeover"));
      assert.equal(await reader.leader(), null, "nobody leads yet");
      let leading = await locks.campaign("takeover", "v0", { ttl: LEASE });
      assert.deepEqual(await reader.leader(), { id: leading.id, value: "v0", epoch: leading.epoch });
      for (let round = 1; round <= 5; round++) {
        const queued = other.campaign("takeover", `v${round}`, { ttl: LEASE });
        await sleep(200);
        await leading.resign();
        const next = await queued;
        // Several nodes: nobody while the grant is committed, or the old leader with a smaller
        // epoch while its committed nodes are released first (the leader rule), before the new one.
        let seen = await reader.leader();
        while (seen === null || seen.id === leading.id) seen = await reader.leader();
        assert.deepEqual(seen, { id: next.id, value: `v${round}`, epoch: next.epoch }, `round ${round}: the committed epoch`);
        assert.equal(await reader.next(500), "nothing", `round ${round}: one event for one takeover`);
        leading = next;
      }
      await leading.resign();
      let last = await reader.leader();
      while (last !== null && last.id === leading.id) last = await reader.leader(); // its epoch as above
      assert.equal(last, null, "nobody after the last resignation");
      await reader.observer.return();
    });

    test("observe: a killed leader's lease runs out, and observers see nobody lead", BOUND, async (t) => {
      if (!(await observes(servers[0]!))) return t.skip("the module has no DLOCK.OBSERVE yet");
      const stop = new AbortController();
      const reader = new Reader(locks.observe("killed", { signal: stop.signal }));
      assert.equal(await reader.leader(), null, "nobody leads at first");
      const child = await leaderProcess(servers, "killed");
      try {
        const elected = await reader.leader();
        assert.deepEqual({ value: elected?.value, epoch: elected?.epoch }, { value: "child", epoch: child.epoch });
        await servers[0]!.command("CONFIG", "RESETSTAT");
        child.kill();
        const killed = performance.now();
        assert.equal(await reader.leader(LEASE + 2_000), null, "the lease ran out");
        const at = performance.now() - killed;
        assert.ok(at < LEASE + 1_000, `seen at the lease's end: ${at} ms`);
        const stats = String(await servers[0]!.command("INFO", "commandstats"));
        const observed = Number(/cmdstat_dlock\.observe:calls=(\d+)/.exec(stats)?.[1] ?? 0);
        assert.ok(observed <= 2, `no polling: ${observed} DLOCK.OBSERVE calls while the lease ran out`);
        assert.equal(await reader.next(300), "nothing", "once");
      } finally {
        child.kill();
      }
      stop.abort();
      assert.equal(await reader.next(1000), "done", "ended by the signal");
    });
  });
}

/** A candidate in another process (elected with value "child"), to be killed while it leads. */
async function leaderProcess(servers: readonly Server[], name: string): Promise<{ epoch: bigint; kill: () => void }> {
  const entry = join(import.meta.dirname, "../../dist/esm/index.js");
  const script = `import { LockManager } from ${JSON.stringify(entry)};
const locks = new LockManager(${JSON.stringify(servers.map((s) => s.url))}, { timeout: 500 });
const leading = await locks.campaign(${JSON.stringify(name)}, "child", { ttl: ${LEASE} });
console.log(leading.epoch.toString());
setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  const kill = (): void => void child.kill("SIGKILL");
  const line = await new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("the child was not elected within 10 s")), 10_000);
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("\n")) {
        clearTimeout(timer);
        resolve(out.trim());
      }
    });
    child.once("exit", (code) => reject(new Error(`the child exited (${code})`)));
  }).catch((e: unknown) => {
    kill();
    throw e;
  });
  return { epoch: BigInt(line), kill };
}

describe("the lease-loss contract (one master)", () => {
  let servers: Server[] = [];
  before(async () => {
    servers = await start(1);
  });
  after(() => stopAll(servers));

  test("a frozen node: leadership lost at the renew deadline, before the lease ends", BOUND, async () => {
    const locks = new LockManager([servers[0]!.url], { timeout: 200 });
    try {
      const leading = await locks.campaign("frozen", "", { ttl: LEASE });
      const granted = performance.now();
      servers[0]!.process!.kill("SIGSTOP");
      try {
        if (!leading.signal.aborted) await new Promise((resolve) => leading.signal.addEventListener("abort", resolve, { once: true }));
      } finally {
        servers[0]!.process!.kill("SIGCONT");
      }
      const at = performance.now() - granted;
      assert.ok(at < LEASE - LEASE / 10 + 100, `lost at ${at} ms`);
      assert.ok(at > LEASE / 2, `not before the renew deadline: ${at} ms`);
      assert.ok(leading.lost);
      await leading.resign().catch(() => undefined);
    } finally {
      await locks.close();
    }
  });

  test("a refused extension (the lock force-released) is a loss at the next extension", BOUND, async () => {
    const locks = new LockManager([servers[0]!.url], { timeout: 500 });
    try {
      const leading = await locks.campaign("taken", "", { ttl: LEASE });
      await servers[0]!.command("DLOCK.FORCERELEASE", "taken");
      const started = performance.now();
      if (!leading.signal.aborted) await new Promise((resolve) => leading.signal.addEventListener("abort", resolve, { once: true }));
      const at = performance.now() - started;
      assert.ok(at < LEASE / 2, `at the next extension (every lease / 3): ${at} ms`);
      await leading.resign().catch(() => undefined);
    } finally {
      await locks.close();
    }
  });

  test("no extension reaches the node after resign", BOUND, async () => {
    const locks = new LockManager([servers[0]!.url], { timeout: 500 });
    try {
      const leading = await locks.campaign("quiet", "", { ttl: 300 });
      await sleep(250); // the watchdog has extended by now (every 100 ms)
      await leading.resign();
      await servers[0]!.command("CONFIG", "RESETSTAT");
      await sleep(400);
      const info = String(await servers[0]!.command("INFO", "commandstats"));
      assert.ok(!info.includes("dlock.extend"), `an extension after resign: ${info}`);
      assert.ok(!leading.lost, "resigned, not lost");
    } finally {
      await locks.close();
    }
  });
});

describe("without a quorum", () => {
  test("leader: NoQuorumError; observe: a NoQuorumError item", BOUND, async () => {
    const locks = new LockManager([`redis://127.0.0.1:${await freePort()}`], { timeout: 200 });
    try {
      await assert.rejects(locks.leader("e"), NoQuorumError);
      const reader = new Reader(locks.observe("e"));
      const got = await reader.next(5_000);
      assert.ok(got instanceof NoQuorumError, `an error item, got ${String(got)}`);
      assert.equal(await reader.next(500), "nothing", "said once while nothing changes");
      await reader.observer.return();
    } finally {
      await locks.close();
    }
  });

  test("bad input is refused before any node is asked", BOUND, async () => {
    const locks = new LockManager(["redis://127.0.0.1:1"]);
    try {
      await assert.rejects(locks.campaign("", "v", { ttl: LEASE }), TypeError);
      await assert.rejects(locks.campaign("e", "v".repeat(201), { ttl: LEASE }), RangeError);
      await assert.rejects(locks.campaign("e", "é".repeat(101), { ttl: LEASE }), RangeError, "200 bytes, not characters");
      await assert.rejects(locks.campaign("e", 7 as unknown as string, { ttl: LEASE }), TypeError);
      await assert.rejects(locks.campaign("e", "v", { ttl: 0 }), RangeError);
      await assert.rejects(locks.campaign("e", "v", { ttl: 86_400_001 }), RangeError);
      await assert.rejects(locks.leader(""), TypeError);
      assert.throws(() => locks.observe(""), TypeError);
    } finally {
      await locks.close();
    }
  });
});
