/**
 * One quorum node (a plain master) over node-redis: a shared connection for the short commands,
 * and dedicated connections for the blocking waits (DLOCK.ACQUIRE ... WAIT), which would
 * otherwise hold up every command queued behind them. Connects lazily and reconnects on its own;
 * a node that is down fails its calls at once (no offline queue), within the call timeout.
 */
import { createClient, RESP_TYPES } from "@redis/client";
import type { Connection } from "../connect.js";
import type { NodeFailure } from "../errors.js";
import { later } from "../timing.js";
import { type Identity, infoRefused, runId, runIdRefused, unknownCommand } from "./identity.js";

/** A reply as dlock reads it: integers as decimal strings (tokens pass 2^53), nil as null. */
export type Reply = string | null | Reply[];

/** A call that did not get a reply: the node's failure. */
export class Failed extends Error {
  constructor(readonly failure: NodeFailure) {
    super(failure.reason);
  }
}

// Integers as strings: a JavaScript number cannot hold a token past 2^53. No command timeout of
// node-redis's (6 sets 5 s by default, and arms an AbortSignal timer per command for it: a
// third of a command's cost): every call is bounded by dlock's own timers.
const TYPES = { [RESP_TYPES.NUMBER]: String } as const;
const OPTIONS = { typeMapping: TYPES, timeout: 0 };
const IDLE_BLOCKING = 4;
const lastError = new WeakMap<object, string>();
/**
 * Each client's identity check (identity.ts) for its current connection: forgotten at each
 * 'ready' (node-redis reconnects on its own), so a new connection is checked before its first
 * request.
 */
const identified = new WeakMap<object, Promise<void> | true>();

type Client = ReturnType<typeof makeClient>;

/**
 * What a server says to refuse a connection's setup in a way connecting again cannot cure
 * (conformance/README.md): credentials, permission, a database it does not have. node-redis would
 * otherwise reconnect for as long as the manager lives, each try in the server's ACL log.
 */
const FINAL = /^(?:WRONGPASS|NOAUTH|NOPERM)\b|DB index is out of range/;
const NO_SUCH_DATABASE = /DB index is out of range/;

/** The database a single server's URL asks for (the query's db wins over the path's). */
function databaseOf(url: string): string {
  const q = url.indexOf("?");
  const db = new URLSearchParams(q < 0 ? "" : url.slice(q + 1)).get("db");
  if (db !== null) return db;
  return url.startsWith("unix://") ? "0" : (/^[a-z]+:\/\/[^/?#]*\/(\d+)/i.exec(url)?.[1] ?? "0");
}

/**
 * What node-redis needs for a URL it does not parse itself: `unix://[user:password@]/path[?db=N]`
 * (node-redis reads redis:// and rediss:// only), and the `client_name` query of any URL.
 */
function fromUrl(url: string): { url?: string; path?: string; username?: string; password?: string; database?: number; name?: string } {
  const q = url.indexOf("?");
  const query = new URLSearchParams(q < 0 ? "" : url.slice(q + 1));
  const name = query.get("client_name") ?? undefined;
  const db = query.get("db");
  const common = { ...(name !== undefined ? { name } : {}), ...(db !== null ? { database: Number(db) } : {}) };
  if (!url.startsWith("unix://")) return { url: q < 0 ? url : url.slice(0, q), ...common };
  let rest = url.slice("unix://".length, q < 0 ? undefined : q);
  const at = rest.indexOf("@/");
  let login = {};
  if (at >= 0) {
    const [user = "", password] = rest.slice(0, at).split(/:(.*)/s);
    login = { ...(user ? { username: decodeURIComponent(user) } : {}), ...(password !== undefined ? { password: decodeURIComponent(password) } : {}) };
    rest = rest.slice(at + 1);
  }
  return { path: rest, ...login, ...common };
}

function makeClient(url: string, connection: Connection, connectTimeout: number) {
  const tls = url.startsWith("rediss://");
  const { path, ...parsed } = fromUrl(url);
  const hasLogin = /\/\/[^/]*@/.test(url);
  const client = createClient({
    ...parsed,
    RESP: 2,
    disableOfflineQueue: true,
    disableClientInfo: true,
    // node-redis 6 watches every command for a server's maintenance notices, which need RESP3.
    maintNotifications: "disabled" as const,
    ...(connection.username !== undefined && !hasLogin ? { username: connection.username } : {}),
    ...(connection.password !== undefined && !hasLogin ? { password: connection.password } : {}),
    socket: {
      ...(path !== undefined ? { path } : {}),
      connectTimeout: Math.max(connectTimeout, 1000),
      // A node back up is used again within 200 ms (a lock left on it by a failed release holds it until its TTL).
      // A refusal no retry can cure stops it: the next call connects once more, to see whether
      // the operator cured it meanwhile.
      reconnectStrategy: (retries: number, cause: unknown) => (cause instanceof Error && FINAL.test(cause.message) ? cause : Math.min(20 * (retries + 1), 200)),
      ...(tls ? { tls: true as const, ...(connection.tls ?? {}) } : {}),
    },
  });
  // The last error says why a node could not be connected to.
  listen(client);
  return client;
}

/**
 * Every failure reaches its caller; an 'error' event nobody hears would crash the process. Each
 * new connection ('ready') is identified again before its first request.
 */
function listen<C extends { on(event: "error" | "ready", listener: (e: unknown) => void): unknown }>(client: C): C {
  client.on("error", (e: unknown) => lastError.set(client, e instanceof Error ? e.message : String(e)));
  client.on("ready", () => identified.delete(client));
  return client;
}

/** A promise of "timeout" after `ms` (a wait's may be years: timing.ts later). */
function timer(ms: number): { promise: Promise<"timeout">; cancel: () => void } {
  let cancel: () => void = () => {};
  const promise = new Promise<"timeout">((resolve) => {
    cancel = later(() => resolve("timeout"), ms);
  });
  return { promise, cancel };
}

export class Server {
  readonly #client: Client;
  readonly #idle: Client[] = [];
  readonly #busy = new Set<Client>();
  #connecting: Promise<void> | undefined;
  #closed = false;

  constructor(
    readonly name: string,
    readonly url: string,
    readonly connection: Connection,
    connectTimeout: number,
    /** Which server each connection reached, checked before its first request (identity.ts). */
    readonly identity?: Identity,
  ) {
    this.#client = makeClient(url, connection, connectTimeout);
  }

  #fail(reason: string): Failed {
    return new Failed({ node: this.name, reason });
  }

  async #ready(client: Client, within: number): Promise<void> {
    if (this.#closed) throw this.#fail("the lock manager is closed");
    if (client.isReady) return this.#identified(client, within);
    if (!client.isOpen) {
      const connecting = client.connect().then(
        () => undefined,
        () => undefined,
      );
      if (client === this.#client) this.#connecting = connecting;
    }
    const t = timer(within);
    let onReady: () => void = () => {};
    let onError: () => void = () => {};
    const ready = new Promise<"ready">((resolve) => {
      onReady = () => resolve("ready");
      client.once("ready", onReady);
    });
    // A failed connection attempt (refused, reset, TLS, auth) answers at once, as in the other
    // clients, rather than at the end of `within`: node-redis keeps reconnecting in the
    // background, and a refusal heard only at the timeout could land after a short wait's
    // deadline and read as contention instead of a failed node.
    const failed = new Promise<"error">((resolve) => {
      onError = () => resolve("error");
      client.once("error", onError);
    });
    try {
      const won = await Promise.race([ready, failed, t.promise]);
      if (won !== "ready" && !client.isReady) {
        const why = lastError.get(client);
        if (won === "error" && why !== undefined) throw this.#notConnected(why);
        throw this.#fail(`not connected within ${within} ms${why ? ` (${why})` : ""}`);
      }
    } finally {
      t.cancel();
      client.off("ready", onReady);
      client.off("error", onError);
    }
    await this.#identified(client, within);
  }

  /** A connection that failed as the server or the socket said (`why`): final when FINAL says so. */
  #notConnected(why: string): Failed {
    if (NO_SUCH_DATABASE.test(why)) {
      const reason = `database ${databaseOf(this.url)} refused by the server (${why})`;
      return new Failed({ node: this.name, reason, refused: "database" });
    }
    return new Failed({ node: this.name, reason: `not connected (${why})`, ...(FINAL.test(why) ? { refused: "setup" as const } : {}) });
  }

  /** The connection's server claimed for this node (identity.ts), once per connection. */
  async #identified(client: Client, within: number): Promise<void> {
    if (this.identity === undefined) return;
    let check = identified.get(client);
    if (check === true) return; // this connection's server is known: requests pay nothing
    if (check === undefined) {
      const pending = this.#identify(client, this.identity, within);
      identified.set(client, pending);
      pending.then(
        () => identified.get(client) === pending && identified.set(client, true),
        () => identified.get(client) === pending && identified.delete(client), // asked again next call
      );
      check = pending;
    }
    await check;
  }

  /** DLOCK.RUNID, or INFO server where the module is older than that command; then the claim. */
  async #identify(client: Client, identity: Identity, within: number): Promise<void> {
    let found: string | undefined;
    try {
      found = String(await this.#send(client, ["DLOCK.RUNID"], within));
    } catch (e) {
      if (!unknownCommand(e instanceof Failed ? e.failure.reason : "")) throw this.#unidentified(e, runIdRefused);
      const info = await this.#send(client, ["INFO", "server"], within).catch((refused: unknown) => {
        throw this.#unidentified(refused, infoRefused);
      });
      found = runId(info);
    }
    const why = identity.check(found);
    if (why !== undefined) throw this.#fail(why);
  }

  /**
   * Why a server would not say its run_id: refused (NOPERM, a renamed command), with what to allow
   * (`say`); anything else (NOAUTH: no password given; a broken connection) as any first request
   * says it.
   */
  #unidentified(e: unknown, say: (said: string) => string): unknown {
    const reason = e instanceof Failed ? e.failure.reason : String(e);
    const final = FINAL.test(reason) ? { refused: "setup" as const } : {}; // NOPERM, NOAUTH: see FINAL
    if (/^(NOPERM|ERR)\b/.test(reason)) return new Failed({ node: this.name, reason: say(reason), ...final });
    return e instanceof Failed ? new Failed({ ...e.failure, ...final }) : e;
  }

  async #send(client: Client, args: string[], within: number): Promise<Reply> {
    const t = timer(within);
    try {
      const reply = client.sendCommand(args, OPTIONS) as Promise<Reply>;
      const won = await Promise.race([reply, t.promise]);
      if (won === "timeout") {
        reply.catch(() => {});
        throw new Failed({ node: this.name, reason: `timed out after ${within} ms`, noReply: true });
      }
      return won;
    } catch (e) {
      if (e instanceof Failed) throw e;
      throw this.#fail(e instanceof Error ? e.message : String(e));
    } finally {
      t.cancel();
    }
  }

  /** One command on the shared connection, within `timeout` ms (connecting included). */
  async call(args: string[], timeout: number): Promise<Reply> {
    const started = performance.now();
    await this.#ready(this.#client, timeout);
    return this.#send(this.#client, args, timeout - (performance.now() - started));
  }

  /**
   * A blocking command on a connection of its own: `connect` ms to be connected, `whole` ms for
   * the reply. A connection whose reply never came is closed (a late reply would be read by the
   * next command); one that answered is kept for the next wait. When `signal` aborts, the
   * connection is closed at once and the call fails with "stopped" (no words that read as the
   * node being down: a sentinel or cluster node keeps its master).
   */
  async callBlocking(args: string[], connect: number, whole: number, signal?: AbortSignal): Promise<Reply> {
    const client = this.#idle.pop() ?? listen(this.#client.duplicate());
    this.#busy.add(client);
    let reusable = false;
    const cut = (): void => void (client.isOpen && client.destroy());
    signal?.addEventListener("abort", cut, { once: true });
    try {
      if (signal?.aborted) throw this.#fail("stopped");
      await this.#ready(client, connect);
      const reply = await this.#send(client, args, whole);
      reusable = !signal?.aborted;
      return reply;
    } catch (e) {
      throw signal?.aborted ? this.#fail("stopped") : e;
    } finally {
      signal?.removeEventListener("abort", cut);
      this.#busy.delete(client);
      if (reusable && !this.#closed && this.#idle.length < IDLE_BLOCKING) this.#idle.push(client);
      else if (client.isOpen) client.destroy();
    }
  }

  /**
   * Several commands on one connection, in order (a write and its WAIT for replicas): the shared
   * one, or a dedicated one when the first blocks.
   */
  async pipeline(commands: string[][], connect: number, whole: number, blocking: boolean): Promise<Reply[]> {
    const client = blocking ? (this.#idle.pop() ?? listen(this.#client.duplicate())) : this.#client;
    if (blocking) this.#busy.add(client);
    let reusable = false;
    try {
      await this.#ready(client, connect);
      const replies = commands.map((args) => this.#send(client, args, whole));
      replies.forEach((r) => r.catch(() => {}));
      const all = await Promise.all(replies);
      reusable = true;
      return all;
    } finally {
      if (blocking) {
        this.#busy.delete(client);
        if (reusable && !this.#closed && this.#idle.length < IDLE_BLOCKING) this.#idle.push(client);
        else if (client.isOpen) client.destroy();
      }
    }
  }

  close(): void {
    this.#closed = true;
    for (const client of [this.#client, ...this.#idle, ...this.#busy]) {
      if (client.isOpen) client.destroy();
    }
    this.#idle.length = 0;
    this.#busy.clear();
    void this.#connecting;
  }
}
