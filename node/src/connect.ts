/**
 * TLS and the logins for every node (client/src/connect.rs): what `rediss://` nodes trust and
 * present, the ACL user and password of the nodes, and the sentinels' own. node-redis takes them
 * as socket and client options, which transport/server.ts sets; checked where the manager's
 * options are (options.ts).
 */

/** TLS settings for `rediss://` nodes (node's tls.connect options). */
export interface TlsOptions {
  readonly ca?: string | Buffer | Array<string | Buffer>;
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  /** false: skip every check of the server's certificate. Unsafe; for tests only. */
  readonly rejectUnauthorized?: boolean;
  readonly servername?: string;
}

/** How a node is logged in to, and its TLS. */
export interface Connection {
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  readonly tls?: TlsOptions | undefined;
}

/** The sentinels' own login (`redis+sentinel://` nodes). */
export interface SentinelLogin {
  readonly username?: string | undefined;
  readonly password?: string | undefined;
}

/** How the nodes are logged in to: the manager's login and TLS, and the sentinels' login. */
export interface Logins {
  readonly connection: Connection;
  readonly sentinel: SentinelLogin;
}
