/**
 * Real redis-server processes with the freshly built module, on free ports (the Node twin of
 * testkit/src/lib.rs and python/tests/cluster.py). DLOCK_MODULE / DLOCK_REDIS_SERVER / DLOCK_CLI
 * override where things are.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createClient, RESP_TYPES } from "@redis/client";

export const REPO = resolve(import.meta.dirname, "../../..");
export const MODULE = process.env["DLOCK_MODULE"] ?? join(REPO, "target/release/libdlock.so");
export const CLI = process.env["DLOCK_CLI"] ?? join(REPO, "target/release/dlock");
const SERVER = process.env["DLOCK_REDIS_SERVER"] ?? "redis-server";

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

/** How a server listens and how the tests reach it: plain TCP by default, or TLS, a socket, a password. */
export interface Flavour {
  /** Arguments that say where it listens (default `--port P`). */
  readonly listen?: (port: number, dir: string) => string[];
  /** Its URL (default `redis://127.0.0.1:P`). */
  readonly url?: (port: number, dir: string) => string;
  /** More server arguments. */
  readonly args?: readonly string[];
  /** false: a plain redis-server, as one whose module is older than a command (default true). */
  readonly module?: boolean;
  /** What the tests' own connections need (TLS material, the password). */
  readonly client?: { readonly tls?: { ca: string; cert: string; key: string }; readonly password?: string };
}

export class Server {
  process: ChildProcess | undefined;
  readonly dir = mkdtempSync(join(tmpdir(), "dlock-node-"));
  constructor(
    readonly port: number,
    readonly flavour: Flavour = {},
  ) {}

  get url(): string {
    return this.flavour.url?.(this.port, this.dir) ?? `redis://127.0.0.1:${this.port}`;
  }

  spawn(): void {
    const listen = this.flavour.listen?.(this.port, this.dir) ?? ["--port", String(this.port)];
    this.process = spawn(
      SERVER,
      [...listen, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", this.dir, "--logfile", "redis.log", ...(this.flavour.args ?? []), ...(this.flavour.module === false ? [] : ["--loadmodule", MODULE])],
      { stdio: "ignore" },
    );
  }

  /** One command on a fresh connection (integers as strings). */
  async command(...args: string[]): Promise<unknown> {
    return (await this.commands([args]))[0];
  }

  /** Commands in turn on one fresh connection (`READONLY` then a read on a replica, say). */
  async commands(list: string[][]): Promise<unknown[]> {
    const tls = this.flavour.client?.tls;
    const socketPath = this.url.startsWith("unix://") ? this.url.slice("unix://".length) : undefined;
    const client = createClient({
      ...(socketPath ? {} : { url: this.url }),
      RESP: 2,
      disableClientInfo: true,
      ...(this.flavour.client?.password ? { password: this.flavour.client.password } : {}),
      socket: { reconnectStrategy: false, connectTimeout: 500, ...(socketPath ? { path: socketPath } : {}), ...(tls ? { tls: true as const, ...tls } : {}) },
    });
    client.on("error", () => {});
    await client.connect();
    try {
      const replies: unknown[] = [];
      for (const args of list) replies.push(await client.sendCommand(args, { typeMapping: { [RESP_TYPES.NUMBER]: String } }));
      return replies;
    } finally {
      client.destroy();
    }
  }

  /** Ours answers: the process_id it reports is our child's (two servers may race for one port). */
  async ready(within = 10_000): Promise<boolean> {
    const deadline = Date.now() + within;
    while (Date.now() < deadline) {
      if (this.process?.exitCode !== null) return false;
      try {
        const info = String(await this.command("INFO", "server"));
        if (info.includes(`process_id:${this.process?.pid}\r`)) return true;
      } catch {
        /* not up yet */
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  }

  kill(): void {
    this.process?.kill("SIGKILL");
  }

  stop(): void {
    this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** `count` fresh masters with the module (`flavour.module` false: without it). */
export async function start(count: number, flavour: Flavour = {}): Promise<Server[]> {
  if (!existsSync(MODULE)) throw new Error(`${MODULE} is missing: run \`cargo build --release -p dlock\` (or set DLOCK_MODULE)`);
  const servers: Server[] = [];
  for (let i = 0; i < count; i++) {
    for (let tries = 0; ; tries++) {
      const server = new Server(await freePort(), flavour);
      server.spawn();
      if (await server.ready()) {
        servers.push(server);
        break;
      }
      server.stop();
      if (tries >= 5) throw new Error(`redis-server would not start (see ${server.dir}/redis.log)`);
    }
  }
  return servers;
}

export function stopAll(servers: readonly Server[]): void {
  for (const s of servers) s.stop();
}
