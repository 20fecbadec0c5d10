/**
 * A Sentinel-managed master as one quorum node (`redis+sentinel://host:port[,host:port...]/NAME`,
 * `rediss+sentinel://` over TLS to the sentinels and the master alike), as the Rust and Python
 * clients have it: the sentinels are asked in turn (`SENTINEL MASTER name`; the one that answered
 * first next time), the server they name is checked with ROLE (a sentinel can name a master a
 * failover has just demoted), and the master found is kept until a call finds it down or
 * read-only. URL credentials are the master's; the sentinels' own come from the manager's
 * `sentinelUsername` / `sentinelPassword`.
 */
import { createClient } from "@redis/client";
import type { NodeFailure } from "../errors.js";
import type { Identity } from "./identity.js";
import type { Connection, SentinelLogin } from "../connect.js";
import { Failed, Server, type Reply } from "./server.js";

/** A sentinel's flags that say the master it watches is down. */
const DOWN_FLAGS = ["s_down", "o_down"];

function fields(reply: unknown): Map<string, string> {
  const map = new Map<string, string>();
  if (Array.isArray(reply)) for (let i = 0; i + 1 < reply.length; i += 2) map.set(String(reply[i]), String(reply[i + 1]));
  return map;
}

/** The master's address from SENTINEL MASTER's reply, or why this sentinel gives none. */
export function masterAddress(service: string, reply: unknown): [string, number] | string {
  const state = fields(reply);
  const host = state.get("ip");
  const port = Number(state.get("port"));
  if (!host || !Number.isInteger(port)) return `unexpected SENTINEL MASTER reply for ${JSON.stringify(service)}`;
  const flags = (state.get("flags") ?? "").split(",");
  if (!flags.includes("master") || flags.some((f) => DOWN_FLAGS.includes(f))) return `sees ${host}:${port} as ${state.get("flags") ?? "?"}`;
  return [host, port];
}

export class Sentinel {
  #sentinels: Array<readonly [string, number]>;
  #master: Server | undefined;
  #resolving: Promise<Server> | undefined;
  #closed = false;

  constructor(
    readonly name: string,
    sentinels: ReadonlyArray<readonly [string, number]>,
    readonly service: string,
    readonly tls: boolean,
    /** The master's login: the URL's, else the manager's. */
    readonly connection: Connection,
    readonly sentinelLogin: SentinelLogin,
    readonly connectTimeout: number,
    /** This node's identity: the master found claims its server, the next one takes it over. */
    readonly identity?: Identity,
  ) {
    this.#sentinels = [...sentinels];
  }

  #fail(reason: string): Failed {
    return new Failed({ node: this.name, reason });
  }

  /** One sentinel's answer: the master's address, or why not. */
  async #ask(host: string, port: number, within: number): Promise<[string, number] | string> {
    const client = createClient({
      RESP: 2,
      disableClientInfo: true,
      ...(this.sentinelLogin.username !== undefined ? { username: this.sentinelLogin.username } : {}),
      ...(this.sentinelLogin.password !== undefined ? { password: this.sentinelLogin.password } : {}),
      socket: { host, port, connectTimeout: within, reconnectStrategy: false, ...(this.tls ? { tls: true as const, ...(this.connection.tls ?? {}) } : {}) },
    });
    let lastError = "";
    client.on("error", (e: unknown) => (lastError = e instanceof Error ? e.message : String(e)));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`timed out after ${within} ms`), within)));
    const asked = (async (): Promise<[string, number] | string> => {
      try {
        await client.connect();
        return masterAddress(this.service, await client.sendCommand(["SENTINEL", "MASTER", this.service]));
      } catch (e) {
        return e instanceof Error ? e.message : lastError || String(e);
      }
    })();
    try {
      return await Promise.race([asked, timeout]);
    } finally {
      clearTimeout(timer);
      if (client.isOpen) client.destroy();
    }
  }

  /** The master the sentinels name now (kept until a call finds it down or demoted). */
  async #masterNode(within: number): Promise<Server> {
    if (this.#closed) throw this.#fail("the lock manager is closed");
    if (this.#master) return this.#master;
    this.#resolving ??= this.#resolve(within).finally(() => (this.#resolving = undefined));
    return this.#resolving;
  }

  async #resolve(within: number): Promise<Server> {
    const said: string[] = [];
    for (const [i, [host, port]] of this.#sentinels.entries()) {
      const answer = await this.#ask(host, port, within);
      if (typeof answer === "string") {
        said.push(`sentinel ${host}:${port}: ${answer}`);
        continue;
      }
      this.#sentinels = [this.#sentinels[i]!, ...this.#sentinels.filter((_, j) => j !== i)]; // ask it first next time
      const [mHost, mPort] = answer;
      const address = mHost.includes(":") ? `[${mHost}]:${mPort}` : `${mHost}:${mPort}`;
      const url = `${this.tls ? "rediss" : "redis"}://${address}`;
      // The group's one place: a failover's new master takes the claim over (identity.ts).
      const node = new Server(`${this.name} (master ${address})`, url, this.connection, this.connectTimeout, this.identity);
      const role = await node.call(["ROLE"], within).catch((e: unknown) => e);
      const kind = Array.isArray(role) ? String(role[0]) : undefined;
      if (kind === "master") {
        this.#master = node;
        return node;
      }
      node.close();
      said.push(`${address}, named master by sentinel ${host}:${port}, is ${kind ? `a ${kind} (a failover under way?)` : `unreachable (${role instanceof Failed ? role.failure.reason : String(role)})`}`);
      break;
    }
    throw this.#fail(`no sentinel names a master for ${JSON.stringify(this.service)}: ${said.join("; ")}`);
  }

  /** A failed call: a master found down or read-only (demoted) is forgotten. */
  #failed(node: Server, e: unknown): never {
    const failure: NodeFailure = e instanceof Failed ? e.failure : { node: node.name, reason: String(e) };
    if (/^READONLY|not connected|closed|ECONNREFUSED|Socket/i.test(failure.reason) && this.#master === node) {
      this.#master = undefined;
      node.close();
    }
    const reason = `${failure.node.slice(this.name.length + 1) || "master"}: ${failure.reason}`;
    throw new Failed({ node: this.name, reason, ...(failure.noReply ? { noReply: true } : {}) });
  }

  async call(args: string[], timeout: number): Promise<Reply> {
    const node = await this.#masterNode(timeout);
    return node.call(args, timeout).catch((e: unknown) => this.#failed(node, e));
  }

  async callBlocking(args: string[], connect: number, whole: number, signal?: AbortSignal): Promise<Reply> {
    const node = await this.#masterNode(connect);
    return node.callBlocking(args, connect, whole, signal).catch((e: unknown) => this.#failed(node, e));
  }

  async pipeline(commands: string[][], connect: number, whole: number, blocking: boolean): Promise<Reply[]> {
    const node = await this.#masterNode(connect);
    return node.pipeline(commands, connect, whole, blocking).catch((e: unknown) => this.#failed(node, e));
  }

  close(): void {
    this.#closed = true;
    this.#master?.close();
    this.#master = undefined;
  }
}
