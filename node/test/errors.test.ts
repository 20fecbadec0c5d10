/**
 * conformance/errors.json against real servers: the class of each failure and the words of its
 * message (the Rust client, the CLI and the Python client run the same table).
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { LockContendedError, LockManager, NoQuorumError, WrongKindError } from "../src/index.js";
import { REPO, type Flavour, freePort, start, stopAll } from "./servers.js";

type Case = Record<string, any>;
const CASES: Case[] = JSON.parse(readFileSync(join(REPO, "conformance/errors.json"), "utf8")).cases;
/** The password of the `password` servers. */
const PASSWORD = "right-password";
const CLASSES: Record<string, (e: unknown) => boolean> = {
  no_quorum: (e) => e instanceof NoQuorumError,
  invalid_argument: (e) => e instanceof TypeError || e instanceof RangeError,
  contended: (e) => e instanceof LockContendedError,
  wrong_kind: (e) => e instanceof WrongKindError,
};

const dir = mkdtempSync(join(tmpdir(), "dlock-node-errors-"));
let tls: Flavour;
before(() => {
  // A self-signed certificate for 127.0.0.1: the TLS server's; the case's client speaks plain TCP.
  const [cert, key] = [join(dir, "server.crt"), join(dir, "server.key")];
  const subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"];
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1", ...subject], { stdio: "pipe" });
  const material = { ca: readFileSync(cert, "utf8"), cert: readFileSync(cert, "utf8"), key: readFileSync(key, "utf8") };
  tls = {
    listen: (port) => ["--port", "0", "--tls-port", String(port)],
    url: (port) => `rediss://127.0.0.1:${port}`,
    args: ["--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", cert, "--tls-auth-clients", "no"],
    client: { tls: material },
  };
});
after(() => rmSync(dir, { recursive: true, force: true }));

const kindOf = (value: unknown): { limit?: number } => (typeof value === "object" && value !== null ? { limit: (value as { limit: number }).limit } : {});

async function failure(c: Case, urls: string[]): Promise<unknown> {
  let locks: LockManager | undefined;
  const url = urls[0]!;
  const other = c.held !== undefined ? new LockManager([url]) : undefined;
  try {
    locks = new LockManager(urls, { timeout: c.timeout_ms, ...(c.password !== undefined ? { password: c.password } : {}) });
    const resource: string = c.resource ?? "r";
    if (other !== undefined) await other.acquire(resource, { ttl: 30_000, ...kindOf(c.held) });
    const started = performance.now();
    try {
      await locks.acquire(resource, { ttl: c.ttl_ms ?? 10_000, ...(c.wait_ms !== null ? { wait: c.wait_ms } : {}), ...kindOf(c.ask) });
    } finally {
      // The call ends within `within_ms`, however long it may wait (a refusal waiting cannot cure).
      const took = performance.now() - started;
      if (c.within_ms !== undefined) assert.ok(took <= c.within_ms, `${c.situation}: took ${Math.round(took)} ms`);
    }
  } catch (e) {
    return e;
  } finally {
    await locks?.close();
    await other?.close();
  }
  assert.fail(`${c.situation}: taken`);
}

for (const c of CASES) {
  test(`errors.json: ${c.situation}`, async () => {
    const servers = c.server === "none" ? [] : await start(1, c.server === "tls" ? tls : {});
    try {
      if (c.server === "password") await servers[0]!.command("CONFIG", "SET", "requirepass", PASSWORD);
      for (const [name, value] of Object.entries((c.config ?? {}) as Record<string, string>)) await servers[0]!.command("CONFIG", "SET", name, value);
      const port = servers[0]?.port ?? (await freePort());
      // `url` is one URL or a list of them (the nodes, in order); {node} is the first.
      const urls = (Array.isArray(c.url) ? c.url : [c.url]).map((u: string) => u.replaceAll("{port}", String(port)));
      const url = urls[0]!;
      const error = await failure(c, urls);
      assert.ok(CLASSES[c.error]!(error), `${c.situation}: ${String(error)}`);
      const said = (error as Error).message;
      const fill = (w: string): string => w.replaceAll("{node}", url).replaceAll("{port}", String(port));
      for (const word of c.words as string[]) assert.ok(said.includes(fill(word)), `${fill(word)} not in: ${said}`);
      for (const word of (c.absent ?? []) as string[]) assert.ok(!said.includes(fill(word)), `${fill(word)} in: ${said}`);
    } finally {
      stopAll(servers);
    }
  });
}

// A refused connection is a failed node at once, not at the end of the per-node timeout: heard
// only then, it landed after a short wait's deadline and read as contention (1 run in 5).
test("a refused node fails at once, well before its timeout, also while waiting", async () => {
  for (let i = 0; i < 5; i++) {
    const locks = new LockManager([`redis://127.0.0.1:${await freePort()}`], { timeout: 2000 });
    const started = performance.now();
    try {
      await assert.rejects(locks.acquire("r", { ttl: 10_000, wait: 100 }), NoQuorumError);
      const took = performance.now() - started;
      assert.ok(took < 1000, `a refused node took ${Math.round(took)} ms to fail`);
    } finally {
      await locks.close();
    }
  }
});
