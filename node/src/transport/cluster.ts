/**
 * A whole Redis Cluster as one quorum node (`redis+cluster://host:port`, `rediss+cluster://`), as
 * the Rust client has it (client/src/transport/cluster.rs): the slot map is read with CLUSTER
 * SLOTS (from a known master, else the seed), each lock goes to the master serving its key's slot,
 * MOVED re-reads the map and follows, ASK sends ASKING first on the target; a master found down
 * makes the next call read the map again (a failover).
 */
import type { NodeFailure } from "../errors.js";
import type { Identity } from "./identity.js";
import type { Connection } from "../connect.js";
import { Failed, Server, type Reply } from "./server.js";
import { type KeySet, byBytes } from "../sets.js";

const SLOTS = 16384;
const MAX_REDIRECTS = 5;

/** CRC16-CCITT (XMODEM), the one Redis Cluster hashes keys with. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The slot of `key`: of its hash tag (the part between the first `{` and the next `}`) when not empty. */
/** The (first) key of a request, which a Cluster routes by: after numkeys for a set's command (DLOCK.*ALL). */
export function keyOf(args: readonly string[]): string {
  return (args[0]?.endsWith("ALL") ? args[2] : args[1]) ?? "";
}

export function keySlot(key: string): number {
  const bytes = Buffer.from(key, "utf8");
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % SLOTS;
  }
  return crc16(bytes) % SLOTS;
}

type SlotMap = Array<readonly [start: number, end: number, address: string]>;

function address(host: string, port: string | number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** CLUSTER SLOTS' reply as ranges and master addresses (an empty host is the one asked). */
function parseSlots(reply: Reply, askedHost: string): SlotMap | string {
  if (!Array.isArray(reply)) return "unexpected CLUSTER SLOTS reply";
  const map: SlotMap = [];
  for (const range of reply) {
    if (!Array.isArray(range) || range.length < 3 || !Array.isArray(range[2])) return "unexpected CLUSTER SLOTS reply";
    const [host, port] = range[2] as Reply[];
    map.push([Number(range[0]), Number(range[1]), address(String(host) || askedHost, String(port))]);
  }
  return map.length ? map : "no slot is served (is the cluster created?)";
}

const isDown = (reason: string): boolean => /not connected|closed|ECONNREFUSED|ECONNRESET|Socket|timed out/i.test(reason);

export class Cluster {
  #slots: SlotMap | undefined;
  #reading: Promise<SlotMap> | undefined;
  readonly #masters = new Map<string, Server>();
  readonly #seed: Server;
  #closed = false;

  constructor(
    readonly name: string,
    readonly seedHost: string,
    seedPort: number,
    readonly tls: boolean,
    readonly connection: Connection,
    readonly connectTimeout: number,
    /** This node's identity: each master claims its server with one of its own. */
    readonly identity?: Identity,
  ) {
    this.#seed = this.#node(address(seedHost, seedPort));
  }

  #node(at: string): Server {
    const url = `${this.tls ? "rediss" : "redis"}://${at}`;
    return new Server(`${this.name} (master ${at})`, url, this.connection, this.connectTimeout, this.identity?.another());
  }

  #fail(reason: string): Failed {
    return new Failed({ node: this.name, reason });
  }

  #master(at: string): Server {
    if (this.#closed) throw this.#fail("the lock manager is closed");
    let node = this.#masters.get(at);
    if (!node) this.#masters.set(at, (node = this.#node(at)));
    return node;
  }

  async #readSlots(within: number): Promise<SlotMap> {
    const reasons: string[] = [];
    for (const server of [...this.#masters.values(), this.#seed]) {
      const host = server.url.replace(/^rediss?:\/\//, "").replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
      try {
        const map = parseSlots(await server.call(["CLUSTER", "SLOTS"], within), host);
        if (typeof map !== "string") return map;
        reasons.push(`${server.url}: ${map}`);
      } catch (e) {
        reasons.push(`${server.url}: ${e instanceof Failed ? e.failure.reason : String(e)}`);
      }
    }
    throw this.#fail(`cannot read the slot map (${reasons.join("; ")})`);
  }

  async #masterFor(key: string, within: number): Promise<Server> {
    const slot = keySlot(key);
    const known = (): string | undefined => this.#slots?.find(([start, end]) => slot >= start && slot <= end)?.[2];
    let at = known();
    if (at === undefined) {
      this.#reading ??= this.#readSlots(within).finally(() => (this.#reading = undefined));
      this.#slots = await this.#reading;
      at = known();
      if (at === undefined) throw this.#fail(`slot ${slot} is not served`);
    }
    return this.#master(at);
  }

  /** `commands` (the first names the key) on the master serving it, following redirects. */
  async #route(commands: string[][], connect: number, send: (node: Server, commands: string[][]) => Promise<Reply[]>): Promise<Reply[]> {
    const key = keyOf(commands[0]!);
    let node = await this.#masterFor(key, connect);
    let asking = false;
    for (let i = 0; i <= MAX_REDIRECTS; i++) {
      try {
        const replies = await send(node, asking ? [["ASKING"], ...commands] : commands);
        return asking ? replies.slice(1) : replies;
      } catch (e) {
        const failure: NodeFailure = e instanceof Failed ? e.failure : { node: node.name, reason: String(e) };
        const redirect = /^(MOVED|ASK) \d+ (\S+)$/.exec(failure.reason);
        if (redirect) {
          if (redirect[1] === "MOVED") this.#slots = undefined; // moved for good: re-read the map
          node = this.#master(redirect[2]!);
          asking = redirect[1] === "ASK";
          continue;
        }
        if (isDown(failure.reason)) {
          // Maybe failed over: the next call reads the map again, and not from this master first.
          this.#slots = undefined;
          for (const [at, n] of this.#masters) if (n === node) this.#masters.delete(at);
          if (node !== this.#seed) node.close();
        }
        const reason = `${failure.node.slice(this.name.length + 1) || "master"}: ${failure.reason}`;
        throw new Failed({ node: this.name, reason, ...(failure.noReply ? { noReply: true } : {}) });
      }
    }
    throw this.#fail(`more than ${MAX_REDIRECTS} redirects for ${JSON.stringify(key)}`);
  }

  async call(args: string[], timeout: number): Promise<Reply> {
    const [reply] = await this.#route([args], timeout, async (node, cmds) =>
      cmds.length === 1 ? [await node.call(cmds[0]!, timeout)] : node.pipeline(cmds, timeout, timeout, false),
    );
    return reply!;
  }

  async callBlocking(args: string[], connect: number, whole: number, signal?: AbortSignal): Promise<Reply> {
    const [reply] = await this.#route([args], connect, async (node, cmds) =>
      cmds.length === 1 ? [await node.callBlocking(cmds[0]!, connect, whole, signal)] : node.pipeline(cmds, connect, whole, true),
    );
    return reply!;
  }

  async pipeline(commands: string[][], connect: number, whole: number, blocking: boolean): Promise<Reply[]> {
    return this.#route(commands, connect, (node, cmds) => node.pipeline(cmds, connect, whole, blocking));
  }

  close(): void {
    this.#closed = true;
    for (const node of this.#masters.values()) node.close();
    this.#masters.clear();
    this.#seed.close();
  }
}

/**
 * On a Redis Cluster, the set taken group by group: the keys of one slot together, groups ordered
 * by slot, keys sorted by bytes inside a group (the one global order that keeps hold-and-wait
 * across groups free of deadlock).
 */
export function groups(keys: readonly string[]): string[][] {
  const bySlot = new Map<number, string[]>();
  for (const key of keys) {
    const slot = keySlot(key);
    bySlot.set(slot, [...(bySlot.get(slot) ?? []), key]);
  }
  return [...bySlot.keys()].sort((a, b) => a - b).map((slot) => [...bySlot.get(slot)!].sort(byBytes));
}

/**
 * The set as its slot groups (`groups`), each a set of its own with its keys' modes as the caller
 * gave them: one group when the keys share a slot (the set itself, unchanged).
 */
export function splitSet(set: KeySet): KeySet[] {
  const parts = groups(set.keys);
  if (parts.length === 1) return [set];
  const modes = new Map(set.keys.map((key, i) => [key, set.modes?.[i] ?? "x"]));
  return parts.map((keys) => {
    const letters = keys.map((key) => modes.get(key)!).join("");
    return letters.includes("s") ? { keys, modes: letters } : { keys };
  });
}
