/**
 * Production-like nodes: TLS with client certificates (a PKI made now with the openssl CLI), a
 * unix socket, a password. Nothing is mocked.
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { LockManager, NoQuorumError } from "../src/index.js";
import { start, stopAll, type Server } from "./servers.js";

/** A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA. */
function makePki(dir: string): Record<"ca" | "serverCert" | "serverKey" | "clientCert" | "clientKey", string> {
  const openssl = (...args: string[]): void => void execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const key = ["-newkey", "rsa:2048", "-nodes"];
  openssl("req", "-x509", ...key, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=dlock node test ca");
  writeFileSync(join(dir, "server.ext"), "subjectAltName=IP:127.0.0.1\n");
  for (const name of ["server", "client"]) {
    openssl("req", ...key, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=dlock node test ${name}`);
    const ext = name === "server" ? ["-extfile", "server.ext"] : [];
    openssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1", "-out", `${name}.crt`, ...ext);
  }
  const f = (name: string): string => join(dir, name);
  return { ca: f("ca.crt"), serverCert: f("server.crt"), serverKey: f("server.key"), clientCert: f("client.crt"), clientKey: f("client.key") };
}

describe("TLS with client certificates", () => {
  const dir = mkdtempSync(join(tmpdir(), "dlock-node-pki-"));
  let pki: ReturnType<typeof makePki>;
  let servers: Server[] = [];
  let material: { ca: string; cert: string; key: string };
  before(async () => {
    pki = makePki(dir);
    material = { ca: readFileSync(pki.ca, "utf8"), cert: readFileSync(pki.clientCert, "utf8"), key: readFileSync(pki.clientKey, "utf8") };
    servers = await start(3, {
      listen: (port) => ["--port", "0", "--tls-port", String(port)],
      url: (port) => `rediss://127.0.0.1:${port}`,
      args: ["--tls-cert-file", pki.serverCert, "--tls-key-file", pki.serverKey, "--tls-ca-cert-file", pki.ca, "--tls-auth-clients", "yes"],
      client: { tls: material },
    });
  });
  after(() => {
    stopAll(servers);
    rmSync(dir, { recursive: true, force: true });
  });

  test("rediss:// nodes with the CA and a client certificate", async () => {
    const locks = new LockManager(servers.map((s) => s.url), { timeout: 1_000, tls: material });
    try {
      const lock = await locks.acquire("tls", { ttl: 5_000 });
      assert.ok((await lock.token()) > 0n);
      await lock.release();
    } finally {
      await locks.close();
    }
  });

  test("without the CA the servers' certificates are refused: NoQuorumError", async () => {
    const locks = new LockManager(servers.map((s) => s.url), { timeout: 500, tls: { cert: material.cert, key: material.key } });
    try {
      const error = await locks.acquire("tls", { ttl: 5_000 }).catch((e: unknown) => e);
      assert.ok(error instanceof NoQuorumError, String(error));
      assert.match(error.failures[0]!.reason, /certificate/i);
    } finally {
      await locks.close();
    }
  });
});

describe("a unix socket and a password", () => {
  let servers: Server[] = [];
  before(async () => {
    servers = await start(1, {
      listen: (_, dir) => ["--port", "0", "--unixsocket", join(dir, "redis.sock")],
      url: (_, dir) => `unix://${join(dir, "redis.sock")}`,
      args: ["--requirepass", "s3cret"],
      client: { password: "s3cret" },
    });
  });
  after(() => stopAll(servers));

  test("unix:// with the manager's password; without it, NoQuorumError", async () => {
    const locks = new LockManager([servers[0]!.url], { password: "s3cret" });
    try {
      const lock = await locks.acquire("sock", { ttl: 5_000 });
      assert.ok((await lock.token()) > 0n);
      await lock.release();
    } finally {
      await locks.close();
    }
    const anonymous = new LockManager([servers[0]!.url], { timeout: 500 });
    try {
      const error = await anonymous.acquire("sock", { ttl: 5_000 }).catch((e: unknown) => e);
      assert.ok(error instanceof NoQuorumError, String(error));
      assert.match(error.failures[0]!.reason, /NOAUTH|WRONGPASS|auth/i);
    } finally {
      await anonymous.close();
    }
  });
});
