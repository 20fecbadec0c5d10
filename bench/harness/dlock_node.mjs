// dlock's Node client (node/, built to node/dist by bench/run.sh) as a contender for `make bench`:
// warms up (warm.mjs), runs one scenario, prints one JSON line. The same arguments and output as redlock.mjs.
// Usage: node dlock_node.mjs --nodes URL,URL --scenario latency|throughput|contention|extend --n N --concurrency C --duration-ms D --prefix P
import { LockManager } from "../../node/dist/esm/index.js";
import { warm } from "./warm.mjs";

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) =>
  a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs, []));
const urls = args.nodes.split(",");
const n = Number(args.n ?? 200);
const concurrency = Number(args.concurrency ?? 1);
const durationMs = Number(args["duration-ms"] ?? 2000);
const prefix = args.prefix ?? "dlocknode";
const ttl = 10000;

// A generous per-node timeout, as for the other dlock contenders: the benchmark measures speed,
// not failure detection, and a loaded 2-core machine must not turn a slow reply into a down node.
const locks = new LockManager(urls, { timeout: 500 });
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

async function latency() {
  const samples = [];
  for (let i = 0; i < n; i++) {
    const start = nowUs();
    const lock = await locks.acquire(`${prefix}:${i}`, { ttl });
    await lock.release();
    samples.push(nowUs() - start);
  }
  return { latencies_us: samples };
}

async function throughput() {
  let ops = 0;
  const deadline = Date.now() + durationMs;
  const start = nowUs();
  await Promise.all(Array.from({ length: concurrency }, async (_, t) => {
    for (let i = 0; Date.now() < deadline; i++) {
      const lock = await locks.acquire(`${prefix}:${t}:${i}`, { ttl });
      await lock.release();
      ops++;
    }
  }));
  return { ops, seconds: (nowUs() - start) / 1e6 };
}

// Contention: `concurrency` tasks on one resource, each holding it 1 ms; queued on the nodes.
async function contention() {
  const waits = [];
  const deadline = Date.now() + durationMs;
  const start = nowUs();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < deadline) {
      const t = nowUs();
      const lock = await locks.acquire(`${prefix}:contended`, { ttl, wait: 60000 });
      waits.push(nowUs() - t);
      await new Promise((r) => setTimeout(r, 1));
      await lock.release();
    }
  }));
  return { latencies_us: waits, ops: waits.length, seconds: (nowUs() - start) / 1e6 };
}

async function extend() {
  const lock = await locks.acquire(`${prefix}:extended`, { ttl });
  const samples = [];
  for (let i = 0; i < n; i++) {
    const start = nowUs();
    await lock.extend(ttl);
    samples.push(nowUs() - start);
  }
  await lock.release();
  return { latencies_us: samples };
}

await warm(async (i) => {
  const lock = await locks.acquire(`${prefix}:warm:${i}`, { ttl });
  await lock.release();
});
const scenarios = { latency, throughput, contention, extend };
const result = await (scenarios[args.scenario] ?? latency)();
console.log(JSON.stringify(result));
await locks.close();
