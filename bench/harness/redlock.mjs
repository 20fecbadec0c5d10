// node-redlock contender for `make bench`: warms up (warm.mjs), runs one scenario, prints one JSON line.
// Usage: node redlock.mjs --nodes URL,URL --scenario latency|throughput|contention|extend --n N --concurrency C --duration-ms D --prefix P
import Redis from "ioredis";
import Redlock from "redlock";
import { warm } from "./warm.mjs";

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) =>
  a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs, []));
const urls = args.nodes.split(",");
const n = Number(args.n ?? 200);
const concurrency = Number(args.concurrency ?? 1);
const durationMs = Number(args["duration-ms"] ?? 2000);
const prefix = args.prefix ?? "redlock";
const ttl = 10000;

const clients = urls.map((u) => new Redis(u, { enableOfflineQueue: true, maxRetriesPerRequest: 1 }));
const redlock = new Redlock(clients, { driftFactor: 0.01, retryCount: 0, retryDelay: 0, retryJitter: 0 });
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

async function latency() {
  const samples = [];
  for (let i = 0; i < n; i++) {
    const start = nowUs();
    const lock = await redlock.acquire([`${prefix}:${i}`], ttl);
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
      const lock = await redlock.acquire([`${prefix}:${t}:${i}`], ttl);
      await lock.release();
      ops++;
    }
  }));
  return { ops, seconds: (nowUs() - start) / 1e6 };
}

// Contention: `concurrency` tasks on one resource, each holding it 1 ms; waits and handoffs.
async function contention() {
  const waiting = new Redlock(clients, { driftFactor: 0.01, retryCount: -1, retryDelay: 25, retryJitter: 25 });
  const waits = [];
  const deadline = Date.now() + durationMs;
  const start = nowUs();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < deadline) {
      const t = nowUs();
      const lock = await waiting.acquire([`${prefix}:contended`], ttl);
      waits.push(nowUs() - t);
      await new Promise((r) => setTimeout(r, 1));
      await lock.release();
    }
  }));
  return { latencies_us: waits, ops: waits.length, seconds: (nowUs() - start) / 1e6 };
}

async function extend() {
  let lock = await redlock.acquire([`${prefix}:extended`], ttl);
  const samples = [];
  for (let i = 0; i < n; i++) {
    const start = nowUs();
    lock = await lock.extend(ttl);
    samples.push(nowUs() - start);
  }
  await lock.release();
  return { latencies_us: samples };
}

await warm(async (i) => {
  const lock = await redlock.acquire([`${prefix}:warm:${i}`], ttl);
  await lock.release();
});
const scenarios = { latency, throughput, contention, extend };
const result = await (scenarios[args.scenario] ?? latency)();
console.log(JSON.stringify(result));
await Promise.all(clients.map((c) => c.quit()));
