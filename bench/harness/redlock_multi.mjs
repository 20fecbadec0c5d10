// node-redlock's array form for `make bench-multi` (docs/bench/multi.md): dining philosophers,
// each worker taking its resources with one `redlock.acquire([r1, .., rk], ttl)` (one script
// per node, all keys at once), holding them `hold-ms`, releasing, again until the run ends.
// Prints one JSON line: waits_us, done_ms (per worker), seconds, errors, error.
// Usage: node redlock_multi.mjs --nodes URL,URL [--cluster 1] --concurrency W --k K --hold-ms H
//   --ttl-ms T --duration-ms D --prefix P
import Redis from "ioredis";
import Redlock from "redlock";

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) =>
  a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs, []));
const urls = args.nodes.split(",");
const cluster = args.cluster === "1";
const workers = Number(args.concurrency ?? 10);
const k = Number(args.k ?? 2);
const holdMs = Number(args["hold-ms"] ?? 1);
const ttl = Number(args["ttl-ms"] ?? 1000);
const durationMs = Number(args["duration-ms"] ?? 10000);
const prefix = args.prefix ?? "redlock-multi";

const clients = cluster
  ? [new Redis.Cluster([{ host: new URL(urls[0]).hostname, port: Number(new URL(urls[0]).port) }])]
  : urls.map((u) => new Redis(u, { enableOfflineQueue: true, maxRetriesPerRequest: 1 }));
// Waiting as the other contenders do (retry until had, 25 ms + up to 25 ms jitter); on a
// Cluster one try, so that an error is reported rather than retried for ever.
const redlock = new Redlock(clients, {
  driftFactor: 0.01, retryCount: cluster ? 0 : -1, retryDelay: 25, retryJitter: 25,
});
const nowUs = () => Number(process.hrtime.bigint() / 1000n);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const out = { waits_us: [], done_ms: Array.from({ length: workers }, () => []), seconds: 0, errors: 0 };

// The first node's own error behind a failed quorum (CROSSSLOT on a Cluster), else the message.
async function describe(e) {
  for (const attempt of e.attempts ?? []) {
    const stats = await attempt;
    for (const err of stats.votesAgainst?.values() ?? []) return String(err.message ?? err);
  }
  return String(e.message ?? e);
}

async function failed(e) {
  out.errors++;
  out.error ??= await describe(e);
}

const start = nowUs();
const deadline = Date.now() + durationMs;

async function worker(w) {
  const resources = Array.from({ length: k }, (_, j) => `${prefix}:r${(w + j) % workers}`);
  while (Date.now() < deadline) {
    const asked = nowUs();
    let lock;
    try {
      lock = await redlock.acquire(resources, ttl);
    } catch (e) {
      await failed(e);
      if (cluster) return;
      await sleep(10);
      continue;
    }
    const held = nowUs();
    await sleep(holdMs);
    try { await lock.release(); } catch (e) { await failed(e); }
    if (Date.now() <= deadline) {
      out.waits_us.push(held - asked);
      out.done_ms[w].push((nowUs() - start) / 1000);
    }
  }
}

// Exits once the line is written: a pipe takes a large line asynchronously, and an exit before
// it drained would cut it.
let finished = false;
function finish() {
  if (finished) return;
  finished = true;
  out.seconds = durationMs / 1000;
  process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(0));
}
// Workers still stuck 5 leases after the end are abandoned (their gap counts).
setTimeout(finish, durationMs + 5 * ttl).unref();
await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
finish();
