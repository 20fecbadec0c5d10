/**
 * Why a node could not be used, in the words every dlock client uses (conformance/errors.json;
 * client/src/transport/diagnosis.rs, go/transport/diagnosis.go): what failed, then what to do.
 * The servers report what node-redis and the socket said; this turns the failures a user can fix
 * (a refused connection, a login, TLS on the wrong port) into advice. No text here carries a
 * credential.
 */
import type { NodeFailure } from "../errors.js";

const LOGIN = "the username and password options, or user:password@ in the URL";
export const REFUSED = "connection refused: is the server running, and is the port right?";
export const PLAIN_TO_TLS = "connection reset during the handshake: is it a TLS port? then use rediss://";

/** `failure` with its reason said the clients' way, when it is one of the failures they name. */
export function explain(failure: NodeFailure): NodeFailure {
  const reason = describe(failure.reason, /^rediss/i.test(failure.node));
  return reason === failure.reason ? failure : { ...failure, reason };
}

function describe(reason: string, tls: boolean): string {
  // The server's own refusal of the login (a sentinel's, inside a longer reason, is left as said).
  const login = /^(?:not connected(?: within \d+ ms)? \()?(NOAUTH|WRONGPASS)\b/.exec(reason)?.[1];
  if (login === "NOAUTH") return `authentication required (NOAUTH): give a user and password (${LOGIN})`;
  if (login === "WRONGPASS") {
    return `authentication failed (wrong user or password): give the right user and password (${LOGIN})`;
  }
  // node-redis 6 connects before its first command is written: a plain client at a TLS port then
  // reads the reset on that command, not while connecting.
  if (!tls && /^(?:read )?ECONNRESET$/.test(reason)) return PLAIN_TO_TLS;
  if (!reason.startsWith("not connected")) return reason;
  if (/ECONNREFUSED/.test(reason)) return REFUSED;
  if (/ENOENT/.test(reason)) return "no such socket: is the server running, and is the path right?";
  if (!tls && /ECONNRESET|socket hang up|Socket closed unexpectedly/i.test(reason)) return PLAIN_TO_TLS;
  const within = /^not connected within (\d+ ms)/.exec(reason)?.[1] ?? "time";
  if (tls && /certificate|self-signed|Hostname|IP: /i.test(reason)) {
    return `TLS: ${reason.replace(/^not connected(?: within \d+ ms)? \((.*)\)$/s, "$1")}: check the CA (tls.ca) and the host name`;
  }
  if (tls && reason === `not connected within ${within}`) {
    return `no TLS handshake within ${within}: a port without TLS? then use redis:// (or the server is paused or overloaded)`;
  }
  return reason;
}
