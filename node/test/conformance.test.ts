/**
 * The shared conformance table (conformance/*.json, format in conformance/README.md): every case
 * run against this client's pure functions. The Rust and Python suites run the same files.
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { Acquisition, type Event, type Step } from "../src/acquisition.js";
import { type Action, Attempt, type AttemptError, type Policy, QUEUE, type Reply, anotherAttempt, classify, lease } from "../src/attempt.js";
import { Commit, type Outcome, owed } from "../src/commit.js";
import type { NodeFailure } from "../src/errors.js";
import { type Leader, type Seen, leaderView } from "../src/election.js";
import { quorum, type Kind } from "../src/kind.js";
import { type Extension, renewal } from "../src/renewal.js";
import { validity } from "../src/timing.js";
import * as cmd from "../src/commands.js";
import { checkSet } from "../src/sets.js";
import { groups, splitSet } from "../src/transport/cluster.js";
import { keyOf, keySlot } from "../src/transport/cluster.js";
import { parseNode } from "../src/transport/urls.js";
import { REPO } from "./servers.js";

type Case = Record<string, any>;

function table(name: string): Case[] {
  const cases = (JSON.parse(readFileSync(join(REPO, "conformance", name), "utf8")) as { cases: Case[] }).cases;
  assert.ok(cases.length > 0, `${name} has no cases`);
  return cases;
}

const label = (c: Case): string => String(c["name"] ?? c["url"] ?? JSON.stringify(c));

function kind(c: Case): Kind {
  if (c["kind"] === "exclusive") return { type: "exclusive" };
  if (c["kind"] === "shared") return { type: "shared" };
  assert.equal(c["kind"], "semaphore");
  return { type: "semaphore", limit: c["limit"] as number };
}

test("quorum sizes by kind", () => {
  for (const c of table("quorum.json")) assert.equal(quorum(c["nodes"], kind(c)), c["quorum"], JSON.stringify(c));
});

test("validity and drift", () => {
  for (const c of table("validity.json")) {
    const left = validity(c["ttl_ms"], c["elapsed_ms"], { factor: c["drift_factor"], constantMs: c["drift_constant_ms"] });
    if (c["validity_ms"] === null) assert.equal(left, undefined, label(c));
    else {
      assert.notEqual(left, undefined, label(c));
      assert.ok(Math.abs(left! - c["validity_ms"]) < 0.001, `${label(c)}: ${left} != ${c["validity_ms"]}`);
    }
  }
});

const POLICIES: Record<string, Policy> = { queue: QUEUE, no_wait: { queue: false, commit: true }, no_wait_uncommitted: { queue: false, commit: false } };

/** A node's answer to an ask, as the driver hands it over. */
function answer(node: number, v: unknown): Reply {
  const name = `node ${node}`;
  // An error reply: node-redis keeps the server's words, code included.
  if (typeof v === "object" && v !== null && "error" in v) return { node: name, reason: (v as { error: string }).error };
  if (typeof v === "object" && v !== null) return BigInt((v as { grant: string }).grant);
  if (v === "nil") return null;
  if (v === "failed") return { node: name, reason: "cannot connect" };
  if (v === "no_reply") return { node: name, reason: "timed out after 50 ms", noReply: true };
  assert.equal(v, "wrong_kind");
  return { node: name, reason: "WRONGKIND held as a semaphore" };
}

function fenceAnswer(node: number, v: string): NodeFailure | undefined {
  if (v === "committed") return undefined;
  return { node: `node ${node}`, reason: v === "refused" ? "fence refused: lock no longer held" : "cannot connect" };
}

function error(e: AttemptError): unknown {
  if (e.type === "no_quorum") return { no_quorum: e.failures.map((f) => Number(f.node.split(" ")[1])) };
  return e.type;
}

function shown(actions: Action[]): unknown[] {
  return actions.map((a) => {
    switch (a.action) {
      case "ask":
        return { ask: { round: a.round, nodes: a.nodes } };
      case "ask_again":
        return { ask_again: { node: a.node, round: a.round, after_pause: a.afterPause } };
      case "fence":
        return { fence: { round: a.round, token: a.token.toString(), nodes: a.nodes } };
      case "release":
        return { release: { round: a.round, nodes: a.nodes } };
      case "held":
        return { held: { round: a.round, token: a.token.toString() } };
      case "failed":
        return { failed: error(a.error) };
    }
  });
}

/** What the attempt does on one scripted input. */
function feed(a: Attempt, given: Case | string): Action[] {
  if (given === "deadline") return a.onDeadline();
  const [[what, v]] = Object.entries(given as Case) as [[string, Case]];
  const { node, round } = v as { node: number; round: number };
  switch (what) {
    case "reply":
      return a.onReply(node, round, answer(node, v["answer"]), v["past_deadline"] ?? false);
    case "fenced":
      return a.onFenced(node, round, fenceAnswer(node, v["answer"]), v["valid"] ?? true);
    case "pause_over":
      return a.onPauseOver(node, round);
    default:
      assert.equal(what, "late");
      return a.onLate(node, round, answer(node, v["answer"]), v["released"] ?? false);
  }
}

test("attempt scripts", () => {
  for (const c of table("attempts.json")) {
    const [a, start] = Attempt.start(c["nodes"], c["needed"], POLICIES[c["policy"]]!);
    assert.deepEqual(shown(start), c["start"], `${label(c)}: start`);
    (c["script"] as Case[]).forEach((entry, i) => {
      assert.deepEqual(shown(feed(a, entry["on"])), entry["do"], `${label(c)}: input ${i} ${JSON.stringify(entry["on"])}`);
    });
  }
});

test("how replies count", () => {
  for (const c of table("replies.json")) {
    const outcome = classify(answer(0, c["answer"]), POLICIES[c["policy"]]!, c["past_deadline"]);
    assert.equal(outcome.type, c["counts_as"], JSON.stringify(c));
  }
});

test("leases", () => {
  for (const c of table("leases.json")) {
    assert.equal(lease(c["nodes"], c["left_ms"] ?? undefined, c["ttl_ms"], c["renewed"]), c["lease"], JSON.stringify(c));
  }
});

test("another attempt or not", () => {
  for (const c of table("retries.json")) {
    const refused = { node: "n", reason: "WRONGKIND" };
    const failure: AttemptError =
      c["error"] === "no_quorum"
        ? { type: "no_quorum", failures: [] }
        : c["error"] === "wrong_kind" || c["error"] === "invalid"
          ? { type: c["error"], failure: refused }
          : { type: c["error"] };
    const again = anotherAttempt(POLICIES[c["policy"]]!, failure, c["out_of_time"], c["attempts"], c["retry_count"] ?? Infinity);
    assert.equal(again, c["again"], JSON.stringify(c));
  }
});

/** An outcome as commits.json writes it: "pending", "lost" or {"committed": token}. */
function outcome(o: unknown): Outcome {
  if (o === "pending" || o === "lost") return { outcome: o };
  return { outcome: "committed", token: BigInt((o as { committed: string }).committed) };
}

test("deferred commits", () => {
  for (const c of table("commits.json")) {
    const at = label(c);
    const isOwed = owed(c["policy"] === "no_wait", c["nodes"], c["fencing"]);
    assert.equal(isOwed, c["owed"], at);
    const start = c["start"] as Case;
    const valid = c["valid"] ?? true;
    if (!isOwed || !valid) {
      assert.deepEqual(valid ? outcome({ committed: c["token"] }) : outcome("lost"), outcome(start["outcome"]), at);
      assert.equal(start["fence"], undefined, at);
      continue;
    }
    const [commit, asked] = Commit.start(c["nodes"], c["needed"], BigInt(c["token"]), c["holding"]);
    assert.deepEqual(asked, start["fence"]["nodes"], at);
    assert.equal(commit.token, BigInt(start["fence"]["token"]), at);
    assert.deepEqual(commit.outcome, outcome(start["outcome"]), at);
    for (const step of c["script"] as Case[]) {
      const { node, answer } = step["fenced"] as { node: number; answer: string };
      assert.deepEqual(commit.onFenced(node, answer === "committed"), outcome(step["outcome"]), `${at}: ${JSON.stringify(step)}`);
    }
  }
});

function event(e: Case): Event {
  if (e["event"] === "granted") return { event: "granted", node: e["node"], round: e["round"], token: BigInt(e["token"]) };
  if (e["event"] === "unavailable") return { event: "unavailable", node: e["node"], round: e["round"] };
  assert.equal(e["event"], "fenced");
  return { event: "fenced", node: e["node"], round: e["round"], committed: e["committed"] };
}

function steps(listed: Case[]): Step[] {
  return listed.map((s): Step => {
    switch (s["step"]) {
      case "wait":
      case "release":
        return { step: s["step"], round: s["round"], nodes: s["nodes"] };
      case "fence":
        return { step: "fence", round: s["round"], token: BigInt(s["token"]), nodes: s["nodes"] };
      case "held":
        return { step: "held", token: BigInt(s["token"]) };
      case "failed":
        return { step: "failed" };
      default:
        throw new Error(`unknown step ${JSON.stringify(s)}`);
    }
  });
}

test("the acquisition machine", () => {
  for (const c of table("acquisition.json")) {
    const [a, start] = c["once"] ? Acquisition.startOnce(c["nodes"], c["needed"], c["commit"] ?? true) : Acquisition.start(c["nodes"], c["needed"]);
    assert.deepEqual(start, steps(c["start"]), `${label(c)}: start`);
    (c["script"] as Case[]).forEach((entry, i) => {
      assert.deepEqual(a.on(event(entry["on"])), steps(entry["steps"]), `${label(c)}: event ${i}`);
    });
    assert.equal(a.held(), c["held"] === null ? undefined : BigInt(c["held"]), `${label(c)}: held`);
    assert.equal(a.round, c["round"], `${label(c)}: round`);
  }
});

test("cluster key slots", () => {
  for (const c of table("slots.json")) assert.equal(keySlot(c["key"]), c["slot"], JSON.stringify(c["key"]));
});

test("node URLs", () => {
  for (const c of table("urls.json")) {
    if (!c["accepted"]) {
      assert.throws(() => parseNode(c["url"]), (e: unknown) => (e instanceof TypeError || e instanceof RangeError) && !e.message.includes("secret"), c["url"]);
      continue;
    }
    const parsed = parseNode(c["url"]);
    assert.equal(parsed.form, c["form"], c["url"]);
    assert.equal(parsed.tls, c["tls"], c["url"]);
    if ("ports" in c) {
      const ports = parsed.form === "sentinel" ? parsed.sentinels.map(([, p]) => p) : parsed.form === "cluster" ? [parsed.port] : parsed.port === undefined ? [] : [parsed.port];
      assert.deepEqual(ports, c["ports"], c["url"]);
    }
    if ("name" in c) assert.equal(parsed.name, c["name"], c["url"]);
  }
});

test("the lease-loss contract", () => {
  for (const c of table("renewals.json")) {
    assert.ok(["extended", "refused", "unconfirmed"].includes(c["last"]), `unknown last: ${JSON.stringify(c)}`);
    const next = renewal(c["ttl_ms"], c["interval_ms"], c["left_ms"], c["last"] as Extension);
    const expected = c["next"] === "lost" ? "lost" : { extendIn: c["next"]["extend_in_ms"] };
    assert.deepEqual(next, expected, `${c["why"]}: ${JSON.stringify(c)}`);
  }
});

/** A leader as leaders.json writes it (epochs as decimal strings). */
const leader = (l: Case): Leader => ({ id: l["id"], value: l["value"], epoch: BigInt(l["epoch"]) });

test("who leads an election", () => {
  for (const c of table("leaders.json")) {
    const nodes = (c["nodes"] as unknown[]).map((n): Seen | undefined => {
      if (n === null) return undefined; // did not answer
      if (n === "free") return null;
      const held = n as Case;
      return { owner: held["owner"], token: BigInt(held["token"]) };
    });
    const previous = c["previous"] ? leader(c["previous"]) : undefined;
    const expected = c["leader"] === null ? undefined : c["leader"] === "none" ? null : leader(c["leader"]);
    assert.deepEqual(leaderView(nodes, c["needed"], previous), expected, label(c));
  }
});

test("sets: checked before any I/O, the exact command of each operation, Cluster groups", () => {
  for (const c of table("sets.json")) {
    const name = c["name"] as string;
    if (!c["accepted"]) {
      assert.throws(() => checkSet(c["resources"], c["modes"] ?? undefined), (e: unknown) => e instanceof RangeError || e instanceof TypeError, name);
      continue;
    }
    const set = checkSet(c["resources"], c["modes"] ?? undefined);
    const owner = c["owner"] as string;
    const ttl = c["ttl_ms"] as number;
    const exclusive: Kind = { type: "exclusive" };
    const sent: Record<string, string[]> = {
      acquire: cmd.acquire(set, owner, ttl, exclusive),
      acquire_wait: cmd.wait(set, owner, ttl, 5000, 7n, exclusive),
      release: cmd.release(set, owner),
      extend: cmd.extend(set, owner, ttl),
      fence: cmd.fence(set, owner, 42n, ttl),
    };
    for (const [operation, expected] of Object.entries(c["commands"] as Record<string, string[]>)) assert.deepEqual(sent[operation], expected, `${name}: ${operation}`);
    assert.deepEqual(groups(set.keys), c["groups"], name);
    assert.equal(keyOf(sent["acquire"]!), c["resources"][0], name);
    // Each slot group a set of its own, its keys' modes as given.
    const parts = splitSet(set);
    assert.deepEqual(parts.map((part) => part.keys), c["groups"], name);
    const modeOf = new Map(set.keys.map((key, i) => [key, set.modes?.[i] ?? "x"]));
    for (const part of parts) assert.equal(part.modes ?? "x".repeat(part.keys.length), part.keys.map((key) => modeOf.get(key)).join(""), name);
  }
});
