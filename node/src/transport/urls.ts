/**
 * Node URLs, checked before anything connects (client/src/transport/urls.rs; the same answers in
 * every client: conformance/urls.json). Schemes are read in any case. `redis://`, `rediss://`
 * (TLS), `unix://`: one master, whose query may set `db` and `client_name`, nothing else;
 * `redis+cluster://`, `rediss+cluster://`: a whole Redis Cluster (port 6379 by default, no
 * query); `redis+sentinel://`, `rediss+sentinel://`: the master a group of sentinels names (port
 * 26379 by default, no query). A bad URL is a TypeError (RangeError for a port out of range), its
 * password hidden.
 */

export type NodeUrl =
  /** `port`: undefined for a socket. */
  | { readonly form: "single"; readonly tls: boolean; readonly name: string; readonly url: string; readonly port: number | undefined }
  | {
      readonly form: "cluster";
      readonly tls: boolean;
      readonly name: string;
      readonly host: string;
      readonly port: number;
      /** Every master's login, from the URL. */
      readonly login: { readonly username?: string; readonly password?: string };
    }
  | {
      readonly form: "sentinel";
      readonly tls: boolean;
      readonly name: string;
      readonly sentinels: ReadonlyArray<readonly [string, number]>;
      readonly service: string;
      /** The master's login, from the URL. */
      readonly login: { readonly username?: string; readonly password?: string };
    };

const SINGLE = ["redis://", "rediss://", "unix://"];
const CLUSTER = ["redis+cluster://", "rediss+cluster://"];
const SENTINEL = ["redis+sentinel://", "rediss+sentinel://"];
const SENTINEL_PORT = 26379;
const PORT = 6379;
/** Query parameters a single-server URL may carry (the rest are the manager's options). */
const URL_QUERY = ["db", "client_name"];
/** The highest database number a server's `databases` setting (an int) can make. */
const MAX_DB = 2 ** 31 - 2;

/** A database number a server could have (digits, 0 to MAX_DB), as every client checks it. */
function database(text: string, what: string, bad: (why: string) => TypeError): void {
  if (!/^\d+$/.test(text)) throw bad(`bad ${what} ${JSON.stringify(text)}`);
  if (Number(text) > MAX_DB) throw new RangeError(bad(`database ${text}: a database number is from 0 to ${MAX_DB} (below the server's databases)`).message);
}

/** The URL with any password hidden: `redis://app:***@host:6379`. */
export function redact(url: string): string {
  return url
    .replace(/^([a-z+]+:\/\/[^:/@]*:)[^@]*@/i, "$1***@")
    .replace(/([?&]password=)[^&]*/i, "$1***");
}

const starts = (url: string, schemes: string[]): boolean => schemes.some((s) => url.startsWith(s));

function port(text: string, bad: (why: string) => Error): number {
  if (!/^\d+$/.test(text)) throw bad(`bad port ${JSON.stringify(text)}`);
  const n = Number(text);
  if (n < 1 || n > 65535) throw new RangeError(bad(`port ${n} out of range 1-65535`).message);
  return n;
}

/** `host[:port]` or `[v6][:port]` → [host, port]. */
function address(text: string, defaultPort: number, bad: (why: string) => Error): [string, number] {
  const m = /^(\[[^\]]+\]|[^:[\]]*)(?::(.*))?$/.exec(text);
  if (!m || !m[1]) throw bad(`bad address ${JSON.stringify(text)} (a host is required)`);
  const host = m[1].replace(/^\[|\]$/g, "");
  return [host, m[2] === undefined ? defaultPort : port(m[2], bad)];
}

/** `url` with its scheme in lower case (`REDIS://h` is `redis://h`). */
function lowercaseScheme(url: string): string {
  const at = url.indexOf("://");
  return at < 0 ? url : url.slice(0, at).toLowerCase() + url.slice(at);
}

export function parseNode(given: unknown): NodeUrl {
  if (typeof given !== "string") throw new TypeError(`every node must be a URL string, got ${typeof given}`);
  const url = lowercaseScheme(given);
  const name = redact(url);
  if (starts(url, CLUSTER)) return cluster(url, name);
  if (starts(url, SENTINEL)) return sentinel(url, name);
  if (starts(url, SINGLE)) return single(url, name);
  throw new TypeError(
    `node URL ${JSON.stringify(name)} must start with one of ${[...SINGLE, ...CLUSTER, ...SENTINEL].join(", ")}`,
  );
}

function single(url: string, name: string): NodeUrl {
  const bad = (why: string): TypeError => new TypeError(`node URL ${JSON.stringify(name)}: ${why}`);
  let at: number | undefined;
  if (url.startsWith("unix://")) {
    const path = url.slice("unix://".length).replace(/^[^/]*@/, "").split("?")[0] ?? "";
    if (!path.startsWith("/")) throw bad("a socket path is required (unix:///path/to/redis.sock)");
  } else {
    const rest = url.slice(url.indexOf("://") + 3);
    const hostport = (rest.split(/[/?#]/)[0] ?? "").replace(/^.*@/, "");
    at = address(hostport, PORT, bad)[1];
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw bad("not a URL");
    }
    const db = parsed.pathname.replace(/^\//, "");
    if (db !== "") database(db, "database", bad);
  }
  const query = url.includes("?") ? new URLSearchParams(url.slice(url.indexOf("?") + 1)) : new URLSearchParams();
  const keys = [...query.keys()];
  for (const [i, key] of keys.entries()) {
    if (keys.indexOf(key) < i) throw bad(`query parameter ${JSON.stringify(key)} given twice`); // which would count?
    if (!URL_QUERY.includes(key)) {
      throw bad(`query parameter ${JSON.stringify(key)} is not supported (only ${URL_QUERY.join(", ")}; timeouts and TLS settings are LockManager options)`);
    }
  }
  const db = query.get("db");
  if (db !== null) database(db, "db", bad);
  return { form: "single", tls: url.startsWith("rediss://"), name, url, port: at };
}

function cluster(url: string, name: string): NodeUrl {
  const bad = (why: string): TypeError => new TypeError(`cluster URL ${JSON.stringify(name)}: ${why}`);
  const rest = url.slice(url.indexOf("://") + 3);
  if (rest.includes("?") || rest.includes("#")) throw bad("query parameters are not supported");
  const [netloc = "", ...pathParts] = rest.split("/");
  const path = pathParts.join("/");
  if (path !== "" && path !== "0") throw bad("Redis Cluster has only database 0");
  const at = netloc.lastIndexOf("@");
  const hostport = netloc.slice(at + 1);
  if (hostport === "") throw bad("a host is required");
  if (hostport.includes(",")) throw bad("one seed address only: the others are found from it");
  const [host, p] = address(hostport, PORT, bad);
  return { form: "cluster", tls: url.startsWith("rediss"), name, host, port: p, login: login(netloc.slice(0, Math.max(at, 0)), at >= 0, bad) };
}

function sentinel(url: string, name: string): NodeUrl {
  const bad = (why: string): TypeError => new TypeError(`sentinel URL ${JSON.stringify(name)}: ${why}`);
  const rest = url.slice(url.indexOf("://") + 3);
  const slash = rest.indexOf("/");
  const netloc = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? "" : rest.slice(slash + 1);
  if (path.includes("?") || path.includes("#")) throw bad("query parameters are not supported");
  const service = decodeURIComponent(path);
  if (!service || service.includes("/")) {
    throw bad("the master's name is required: redis+sentinel://host:port[,host:port...]/MASTER_NAME");
  }
  const at = netloc.lastIndexOf("@");
  const hosts = at < 0 ? netloc : netloc.slice(at + 1);
  const sentinels = hosts.split(",").map((h) => address(h, SENTINEL_PORT, bad));
  return { form: "sentinel", tls: url.startsWith("rediss"), name, sentinels, service, login: login(netloc.slice(0, Math.max(at, 0)), at >= 0, bad) };
}

/** `user:password` (or `:password`) before the `@` of a URL. */
function login(userinfo: string, given: boolean, bad: (why: string) => Error): { username?: string; password?: string } {
  if (!given) return {};
  const colon = userinfo.indexOf(":");
  if (colon < 0) throw bad("a user name needs a password (user:password@)");
  const user = decodeURIComponent(userinfo.slice(0, colon));
  return { ...(user ? { username: user } : {}), password: decodeURIComponent(userinfo.slice(colon + 1)) };
}

const SCHEMES = [...SINGLE, ...CLUSTER, ...SENTINEL];

/**
 * `url` if its scheme is one dlock knows (in any case), else the TypeError every client words the
 * same way, listing the schemes it takes. Any other check of a URL is parseNode's.
 */
export function checkScheme(url: unknown): string {
  if (typeof url !== "string") return url as string; // the transport names the type
  if (SCHEMES.some((s) => url.toLowerCase().startsWith(s))) return url;
  const name = redact(url);
  const what = url.includes("://") ? "an unknown scheme" : "no scheme";
  const known = SCHEMES.slice(0, -1).join(", ");
  throw new TypeError(`node URL ${JSON.stringify(name)} has ${what}: use ${known} or ${SCHEMES.at(-1)}`);
}
