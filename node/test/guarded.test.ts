/** Guarded writes from Node: a holder stalled past its lease is refused at the data's gate. */
import "./timeout.js";
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createClient } from "@redis/client";
import { LockLostError, LockManager, StaleTokenError } from "../src/index.js";
import { start, stopAll, type Server } from "./servers.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

for (const count of [1, 5]) {
  describe(`guarded writes, ${count} lock node(s) and a data server`, () => {
    let servers: Server[] = [];
    let locks: LockManager;
    let data: ReturnType<typeof createClient>;
    before(async () => {
      servers = await start(count + 1);
      locks = new LockManager(servers.slice(0, count).map((s) => s.url), { timeout: 500 });
      data = createClient({ url: servers[count]!.url, RESP: 2, socket: { reconnectStrategy: false } });
      data.on("error", () => {});
      await data.connect();
    });
    after(async () => {
      data.destroy();
      await locks.close();
      stopAll(servers);
    });

    test("the stalled holder's write is StaleTokenError, the newer one stands, the lock is lost", async () => {
      const old = await locks.acquire("report", { ttl: 300 });
      assert.equal(await old.guarded(data, "report:gate", ["SET", "report", "first"]), "OK");
      const oldToken = await old.token(); // committed by the guarded write
      await sleep(400); // stalled past its lease
      const fresh = await locks.acquire("report", { ttl: 10_000 });
      assert.ok((await fresh.token()) > oldToken);
      await fresh.guarded(data, "report:gate", ["SET", "report", "fresh"]);
      await assert.rejects(old.guarded(data, "report:gate", ["SET", "report", "stale"]), (e: unknown) => {
        assert.ok(e instanceof StaleTokenError && e instanceof LockLostError);
        assert.equal(e.token, oldToken);
        return true;
      });
      assert.ok(old.lost && old.signal.aborted && old.validity === 0);
      // Known lost: nothing more is sent, not even through a gate nobody raised.
      await assert.rejects(old.guarded(data, "other:gate", ["SET", "report", "x"]), LockLostError);
      assert.equal(await data.get("report"), "fresh");
      assert.equal(await data.exists("other:gate"), 0);
      await fresh.release();
    });
  });
}
