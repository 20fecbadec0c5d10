/**
 * Node, the Rust CLI (`dlock run`) and the Python client contend for one resource from several
 * processes on five masters: the critical sections never overlap and their bigint fencing tokens
 * strictly increase across the three languages. Python takes part when python/.venv exists
 * (`make python-venv`); the CLI must be built.
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { LockContendedError, LockManager, WrongKindError } from "../src/index.js";
import { CLI, REPO, start, stopAll } from "./servers.js";

const ROUNDS = 4;
const HOLD_MS = 20;
const PYTHON = join(REPO, "python/.venv/bin/python");
const INDEX = pathToFileURL(join(import.meta.dirname, "../src/index.js")).href;

const NODE_WORKER = `
import { appendFileSync } from "node:fs";
const { LockManager } = await import(process.argv[1]);
const [nodes, log, rounds, hold] = [process.argv[2].split(","), process.argv[3], Number(process.argv[4]), Number(process.argv[5])];
const locks = new LockManager(nodes, { timeout: 500 });
for (let i = 0; i < rounds; i++) {
  await locks.using("interop", { ttl: 10000, wait: 60000 }, async (lock) => {
    appendFileSync(log, "node " + (await lock.token()) + " start\\n");
    await new Promise((r) => setTimeout(r, hold));
    appendFileSync(log, "node " + (await lock.token()) + " end\\n");
  });
}
await locks.close();
`;

const PYTHON_WORKER = `
import sys, time
from dlock import LockManager
nodes, log, rounds, hold = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) / 1000
with LockManager(nodes, timeout=0.5) as locks:
    for _ in range(rounds):
        with locks.lock("interop", ttl=10.0, wait=60.0) as lock:
            with open(log, "a") as f:
                f.write(f"python {lock.token()} start\\n")
            time.sleep(hold)
            with open(log, "a") as f:
                f.write(f"python {lock.token()} end\\n")
`;

const SECTION = `echo "rust $DLOCK_TOKEN start" >> "$LOG"; sleep ${HOLD_MS / 1000}; echo "rust $DLOCK_TOKEN end" >> "$LOG"`;

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ["ignore", "inherit", "inherit"] });
    child.once("error", reject);
    child.once("exit", (code) => resolve(code));
  });
}

test("Node, the Rust CLI and Python never overlap; tokens rise across all three", { timeout: 180_000 }, async () => {
  assert.ok(existsSync(CLI), `${CLI} is missing: run \`cargo build --release -p dlock-cli\` (or set DLOCK_CLI)`);
  const servers = await start(5);
  try {
    const nodes = servers.map((s) => s.url).join(",");
    const log = join(mkdtempSync(join(tmpdir(), "dlock-interop-")), "sections.log");
    appendFileSync(log, "");
    const cli = (): Promise<number | null> =>
      run("sh", ["-c", `for i in $(seq ${ROUNDS}); do "$@" || exit $?; done`, "sh", CLI, "run", "interop", "--nodes", nodes, "--timeout", "500ms", "--ttl", "10s", "--wait", "60s", "--", "sh", "-c", SECTION], {
        ...process.env,
        LOG: log,
      });
    const node = (): Promise<number | null> => run(process.execPath, ["--input-type=module", "-e", NODE_WORKER, INDEX, nodes, log, String(ROUNDS), String(HOLD_MS)]);
    const python = (): Promise<number | null> => run(PYTHON, ["-c", PYTHON_WORKER, nodes, log, String(ROUNDS), String(HOLD_MS)]);
    const withPython = existsSync(PYTHON);
    const workers = [node(), cli(), node(), cli(), ...(withPython ? [python(), python()] : [])];
    assert.deepEqual(await Promise.all(workers), workers.map(() => 0));
    const lines = readFileSync(log, "utf8").trim().split("\n").map((l) => l.split(" "));
    assert.equal(lines.length % 2, 0, "a section never ended");
    const sections: Array<[string, bigint]> = [];
    for (let i = 0; i < lines.length; i += 2) {
      const [start, end] = [lines[i]!, lines[i + 1]!];
      assert.ok(start[2] === "start" && end[2] === "end" && start[0] === end[0] && start[1] === end[1], `overlap: ${start.join(" ")} / ${end.join(" ")}`);
      sections.push([start[0]!, BigInt(start[1]!)]);
    }
    assert.equal(sections.length, workers.length * ROUNDS);
    assert.deepEqual(new Set(sections.map(([who]) => who)), new Set(["node", "rust", ...(withPython ? ["python"] : [])]));
    for (let i = 1; i < sections.length; i++) assert.ok(sections[i - 1]![1] < sections[i]![1], `tokens out of order at ${i}`);
    for (const s of servers) assert.equal(await s.command("DLOCK.STATUS", "interop"), null);
  } finally {
    stopAll(servers);
  }
});

const exec = promisify(execFile);

/** `dlock ARGS...`: its exit code and output. */
async function dlock(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await exec(CLI, args);
    return { code: 0, out: stdout.trim() };
  } catch (e) {
    const failed = e as { code?: number; stdout?: string };
    return { code: failed.code ?? -1, out: (failed.stdout ?? "").trim() };
  }
}

/** Python's answer to one try_lock: "held TOKEN" (then released) or the error class's name. */
async function pythonTry(nodes: string, resource: string, kind: string): Promise<string> {
  const script = `
import sys
import dlock
locks = dlock.LockManager(sys.argv[1].split(","), timeout=0.5)
try:
    lock = locks.try_lock(sys.argv[2], ttl=10.0, ${kind})
    print("held", lock.token())
    lock.release()
except dlock.DlockError as e:
    print(type(e).__name__)
`;
  const { stdout } = await exec(PYTHON, ["-c", script, nodes, resource]);
  return stdout.trim();
}

test("shared holds and semaphore permits mean the same in Node, the Rust CLI and Python", { timeout: 60_000 }, async () => {
  const servers = await start(3);
  const urls = servers.map((s) => s.url);
  const nodes = urls.join(",");
  const locks = new LockManager(urls, { timeout: 500 });
  const withPython = existsSync(PYTHON);
  try {
    // A Node reader and a CLI reader share the lock; a writer from any client is refused as
    // contended, a semaphore's permit as the wrong kind.
    const reader = await locks.acquire("rw", { ttl: 10_000, shared: true });
    const cli = await dlock("acquire", "rw", "--shared", "--nodes", nodes, "--timeout", "500ms");
    assert.equal(cli.code, 0, cli.out);
    const [cliOwner] = cli.out.split(" ");
    assert.equal((await dlock("acquire", "rw", "--nodes", nodes, "--timeout", "500ms")).code, 3, "the CLI's writer: held");
    assert.equal((await dlock("acquire", "rw", "--limit", "2", "--nodes", nodes, "--timeout", "500ms")).code, 7, "the CLI's permit: wrong kind");
    await assert.rejects(locks.acquire("rw", { ttl: 1_000 }), LockContendedError);
    await assert.rejects(locks.acquire("rw", { ttl: 1_000, limit: 2 }), WrongKindError);
    if (withPython) {
      assert.match(await pythonTry(nodes, "rw", "shared=True"), /^held \d+$/);
      assert.equal(await pythonTry(nodes, "rw", "shared=False"), "LockContended");
      assert.equal(await pythonTry(nodes, "rw", "limit=2"), "WrongKindError");
    }
    await reader.release();
    assert.equal((await dlock("release", "rw", cliOwner!, "--nodes", nodes)).code, 0);
    const writer = await locks.acquire("rw", { ttl: 10_000 });
    await writer.release();

    // A semaphore of 2: one permit in Node, one in the CLI; the third is refused everywhere.
    const permit = await locks.acquire("sem", { ttl: 10_000, limit: 2 });
    const second = await dlock("acquire", "sem", "--limit", "2", "--nodes", nodes, "--timeout", "500ms");
    assert.equal(second.code, 0, second.out);
    assert.ok(BigInt(second.out.split(" ")[1]!) > 0n);
    await assert.rejects(locks.acquire("sem", { ttl: 1_000, limit: 2 }), LockContendedError);
    assert.equal((await dlock("acquire", "sem", "--limit", "2", "--nodes", nodes, "--timeout", "500ms")).code, 3);
    if (withPython) assert.equal(await pythonTry(nodes, "sem", "limit=2"), "LockContended");
    // The CLI's permit handed back: Node's waiter gets it.
    const waiting = locks.acquire("sem", { ttl: 10_000, limit: 2, wait: 5_000 });
    assert.equal((await dlock("release", "sem", second.out.split(" ")[0]!, "--nodes", nodes)).code, 0);
    const third = await waiting;
    assert.ok((await third.token()) > 0n);
    await third.release();
    await permit.release();
  } finally {
    await locks.close();
    stopAll(servers);
  }
});
