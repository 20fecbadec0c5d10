/**
 * The shared conformance table (conformance/*.json, format in conformance/README.md): every case
 * run against this client's pure functions. The Rust and Python suites run the same files.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { Acquisition, type Event, type Step } from "../src/acquisition.js";
import { keySlot } from "../src/cluster.js";
import { quorum, validity, type Kind } from "../src/timing.js";
import { parseNode } from "../src/urls.js";
import { commitVerdict, countVotes, nodesWorthAskingAgain, quorumToken, type AttemptError, type Verdict, type Vote } from "../src/verdicts.js";
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

function shown(v: Verdict | AttemptError | { held: bigint }): unknown {
  if ("held" in v) return { held: v.held.toString() };
  if ("ok" in v) return v.ok ? { held: v.token.toString() } : v.error.type;
  return v.type;
}

test("round verdicts", () => {
  for (const c of table("rounds.json")) {
    const votes: Vote[] = (c["votes"] as unknown[]).map((v, n) =>
      v === "refused"
        ? { type: "refused" }
        : v === "failed"
          ? { type: "failed", failure: { node: `node ${n}`, reason: "timed out" } }
          : { type: "granted", token: BigInt((v as { grant: string }).grant) },
    );
    const nodes = votes.length;
    const needed = quorum(nodes, kind(c));
    assert.deepEqual(nodesWorthAskingAgain(votes, needed), c["ask_again"], label(c));
    const count = countVotes(votes);
    const phase1 = quorumToken(nodes, needed, count);
    assert.deepEqual(shown(phase1), c["verdict"], label(c));
    if (!("fence" in c)) continue;
    const fence = c["fence"] as boolean[];
    assert.equal(fence.length, count.grants.length, label(c));
    const refused = count.grants.filter((_, i) => !fence[i]).map(([n]) => ({ node: `node ${n}`, reason: "refused" }));
    const error = commitVerdict(needed, count, refused, c["valid"] as boolean);
    assert.deepEqual(error ? shown(error) : shown(phase1), c["committed"], label(c));
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
    const [a, start] = Acquisition.start(c["nodes"], c["needed"]);
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
      assert.throws(() => parseNode(c["url"]), (e: unknown) => e instanceof TypeError || e instanceof RangeError, c["url"]);
      continue;
    }
    const parsed = parseNode(c["url"]);
    assert.equal(parsed.form, c["form"], c["url"]);
    assert.equal(parsed.tls, c["tls"], c["url"]);
  }
});
