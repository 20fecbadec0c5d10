/**
 * Node, the Rust CLI (`dlock run`) and the Python client contend for one resource from several
 * processes on five masters: the critical sections never overlap and their bigint fencing tokens
 * strictly increase across the three languages. Python takes part when python/.venv exists
 * (`make python-venv`); the CLI must be built.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
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
    appendFileSync(log, "node " + lock.token + " start\\n");
    await new Promise((r) => setTimeout(r, hold));
    appendFileSync(log, "node " + lock.token + " end\\n");
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
                f.write(f"python {lock.token} start\\n")
            time.sleep(hold)
            with open(log, "a") as f:
                f.write(f"python {lock.token} end\\n")
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
