"""The shared conformance table (conformance/*.json, format in conformance/README.md): every case
run against this client's pure functions. The Rust and Node suites run the same files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis
from redis._parsers import _RESP2Parser

from dlock._pure import acquisition as acq
from dlock._pure import attempt as att
from dlock._pure import commands as cmds
from dlock._pure import commit as cm
from dlock._pure.cluster import slot_of
from dlock._pure.election import UNKNOWN, Leader, Seen, leader_view, split_owner
from dlock._pure.kind import Kind
from dlock._pure.options import Options
from dlock._pure.renewal import renew_margin, renewal
from dlock._pure.replies import NodeTimeout, reason
from dlock._pure.replies import answer as node_answer
from dlock._pure.sets import check_set, groups, split
from dlock._pure.timing import validity
from dlock._pure.urls import Seed, SentinelGroup, Single, endpoint
from dlock._pure.verdicts import (
    CONTENDED,
    EXPIRED,
    INVALID,
    NO_QUORUM,
    REFUSED,
    ArgumentRefusal,
    AttemptFailed,
    KindRefusal,
)
from dlock.errors import NodeFailure

TABLE = Path(__file__).resolve().parents[2] / "conformance"


def cases(name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads((TABLE / name).read_text())["cases"]
    assert found, f"{name} has no cases"
    return found


def label(case: dict[str, Any]) -> str:
    return str(case.get("name") or case.get("url") or case.get("why") or json.dumps(case))


def table(name: str) -> Any:
    found = cases(name)
    return pytest.mark.parametrize("case", found, ids=[label(c) for c in found])


def kind(case: dict[str, Any]) -> Kind:
    return {"exclusive": Kind(), "shared": Kind(shared=True)}.get(case["kind"]) or Kind(limit=case["limit"])


@table("quorum.json")
def test_quorum_sizes_by_kind(case: dict[str, Any]) -> None:
    assert kind(case).quorum(case["nodes"]) == case["quorum"]


@table("validity.json")
def test_validity_and_drift(case: dict[str, Any]) -> None:
    opts = Options(drift_factor=case["drift_factor"], drift_constant=case["drift_constant_ms"] / 1000)
    left = validity(case["ttl_ms"], 100.0, 100.0 + case["elapsed_ms"] / 1000, opts)
    if case["validity_ms"] is None:
        assert left is None
    else:
        assert left is not None
        assert left * 1000 == pytest.approx(case["validity_ms"], abs=0.001)


POLICIES = {"queue": att.QUEUE, "no_wait": att.Policy(False, True), "no_wait_uncommitted": att.Policy(False, False)}


def answer(node: int, v: Any) -> object:
    """A node's answer to an ask, as the driver hands it over (an error reply as redis-py gives
    it, through the transport's reading of it)."""
    if isinstance(v, dict) and "error" in v:
        error = _RESP2Parser(socket_read_size=65536).parse_error(v["error"])
        if not isinstance(error, redis.ResponseError):  # LOADING: raised by redis-py, a node failure
            return NodeFailure(f"node {node}", reason(error))
        return node_answer(f"node {node}", ("DLOCK.ACQUIRE", "r", "o", "10000"), [error], None)
    if isinstance(v, dict):
        return int(v["grant"])
    return {
        "nil": None,
        "failed": NodeFailure(f"node {node}", "cannot connect"),
        "no_reply": NodeTimeout(f"node {node}", "timed out after 50ms"),
        "wrong_kind": KindRefusal(f"node {node}", "WRONGKIND held as a semaphore"),
    }[v]


def fence_answer(node: int, v: str) -> NodeFailure | None:
    refused = NodeFailure(f"node {node}", "fence refused: lock no longer held")
    return {"committed": None, "refused": refused, "failed": NodeFailure(f"node {node}", "cannot connect")}[v]


def error(e: AttemptFailed) -> Any:
    if e.kind == NO_QUORUM:
        return {"no_quorum": [int(f.node.split()[-1]) for f in e.failures]}
    shown = {"contended": "contended", "validity expired": "expired", "kind refused": "wrong_kind"}
    return shown.get(e.kind, "invalid" if e.kind == INVALID else e.kind)


def shown(actions: list[att.Action]) -> list[Any]:
    out: list[Any] = []
    for a in actions:
        match a:
            case att.Ask(round_, nodes):
                out.append({"ask": {"round": round_, "nodes": nodes}})
            case att.AskAgain(node, round_, after_pause):
                out.append({"ask_again": {"node": node, "round": round_, "after_pause": after_pause}})
            case att.Fence(round_, token, nodes):
                out.append({"fence": {"round": round_, "token": str(token), "nodes": nodes}})
            case att.Release(round_, nodes):
                out.append({"release": {"round": round_, "nodes": nodes}})
            case att.Held(round_, token):
                out.append({"held": {"round": round_, "token": str(token)}})
            case att.Failed(failure):
                out.append({"failed": error(failure)})
    return out


def feed(a: att.Attempt, given: Any) -> list[att.Action]:
    """What the attempt does on one scripted input."""
    if given == "deadline":
        return a.on_deadline()
    ((what, v),) = given.items()
    node, round_ = v["node"], v["round"]
    if what == "reply":
        return a.on_reply(node, round_, answer(node, v["answer"]), v.get("past_deadline", False))
    if what == "fenced":
        return a.on_fenced(node, round_, fence_answer(node, v["answer"]), v.get("valid", True))
    if what == "pause_over":
        return a.on_pause_over(node, round_)
    assert what == "late", given
    return a.on_late(node, round_, answer(node, v["answer"]), v.get("released", False))


@table("attempts.json")
def test_attempt_scripts(case: dict[str, Any]) -> None:
    a, start = att.Attempt.start(case["nodes"], case["needed"], POLICIES[case["policy"]])
    assert shown(start) == case["start"]
    for i, entry in enumerate(case["script"]):
        assert shown(feed(a, entry["on"])) == entry["do"], f"input {i}: {entry['on']}"


@table("replies.json")
def test_how_replies_count(case: dict[str, Any]) -> None:
    outcome = att.classify(answer(0, case["answer"]), POLICIES[case["policy"]], case["past_deadline"])
    counted = (
        "granted"
        if isinstance(outcome, int)
        else "busy"
        if outcome is att.BUSY
        else "invalid"
        if isinstance(outcome, ArgumentRefusal)
        else "wrong_kind"
        if isinstance(outcome, KindRefusal)
        else "failed"
    )
    assert counted == case["counts_as"]


@table("leases.json")
def test_leases(case: dict[str, Any]) -> None:
    left = None if case["left_ms"] is None else case["left_ms"] / 1000
    assert att.lease(case["nodes"], left, case["ttl_ms"], case["renewed"]) == case["lease"]


@table("retries.json")
def test_another_attempt_or_not(case: dict[str, Any]) -> None:
    kinds = {"contended": CONTENDED, "no_quorum": NO_QUORUM, "expired": EXPIRED, "wrong_kind": REFUSED}
    kind = kinds.get(case["error"], INVALID if case["error"] == "invalid" else case["error"])
    again = att.another_attempt(
        POLICIES[case["policy"]], AttemptFailed(kind), case["out_of_time"], case["attempts"], case["retry_count"]
    )
    assert again == case["again"]


def event(e: dict[str, Any]) -> acq.Event:
    if e["event"] == "granted":
        return acq.Granted(e["node"], e["round"], int(e["token"]))
    if e["event"] == "unavailable":
        return acq.Unavailable(e["node"], e["round"])
    assert e["event"] == "fenced"
    return acq.Fenced(e["node"], e["round"], e["committed"])


def steps(listed: list[dict[str, Any]]) -> list[acq.Step]:
    made: list[acq.Step] = []
    for s in listed:
        match s["step"]:
            case "wait":
                made.append(acq.Wait(s["round"], s["nodes"]))
            case "release":
                made.append(acq.Release(s["round"], s["nodes"]))
            case "fence":
                made.append(acq.Fence(s["round"], int(s["token"]), s["nodes"]))
            case "held":
                made.append(acq.Held(int(s["token"])))
            case "failed":
                made.append(acq.Failed())
            case other:
                raise AssertionError(f"unknown step {other!r}")
    return made


@table("acquisition.json")
def test_acquisition_machine(case: dict[str, Any]) -> None:
    if case.get("once", False):
        a, start = acq.Acquisition.start_once(case["nodes"], case["needed"], case.get("commit", True))
    else:
        a, start = acq.Acquisition.start(case["nodes"], case["needed"])
    assert start == steps(case["start"])
    for i, entry in enumerate(case["script"]):
        assert a.on(event(entry["on"])) == steps(entry["steps"]), f"event {i}"
    assert a.held() == (None if case["held"] is None else int(case["held"]))
    assert a.round == case["round"]


@table("slots.json")
def test_cluster_key_slots(case: dict[str, Any]) -> None:
    assert slot_of(case["key"]) == case["slot"]


FORMS = {Single: "single", Seed: "cluster", SentinelGroup: "sentinel"}


def ports(made: object) -> list[int]:
    """The ports a node names."""
    if isinstance(made, Single):
        return [] if "path" in made.kwargs else [made.kwargs.get("port", 6379)]
    if isinstance(made, Seed):
        return [int(made.address.rpartition(":")[2])]
    assert isinstance(made, SentinelGroup)
    return [port for _, port in made.sentinels]


@table("urls.json")
def test_node_urls(case: dict[str, Any]) -> None:
    if not case["accepted"]:
        with pytest.raises(ValueError) as refused:
            endpoint(case["url"], redis.Redis)
        assert "secret" not in str(refused.value), "the password shown"
        return
    made = endpoint(case["url"], redis.Redis)
    assert FORMS[type(made)] == case["form"]
    assert made.tls == case["tls"]
    if "ports" in case:
        assert ports(made) == case["ports"]
    if "name" in case:
        assert made.name == case["name"]


@table("renewals.json")
def test_renewals_by_the_lease_loss_contract(case: dict[str, Any]) -> None:
    got = renewal(case["ttl_ms"], case["interval_ms"], case["left_ms"], case["last"])
    expected = None if case["next"] == "lost" else case["next"]["extend_in_ms"]
    assert got == expected
    assert renew_margin(case["ttl_ms"]) == max(case["ttl_ms"] // 10, 1)


def as_leader(pinned: Any) -> Leader | str | None:
    if pinned is None:
        return UNKNOWN
    if pinned == "none":
        return None
    return Leader(pinned["id"], pinned["value"], int(pinned["epoch"]))


def as_seen(node: Any) -> Seen | str:
    if node is None:
        return UNKNOWN
    return None if node == "free" else (node["owner"], int(node["token"]))


@table("leaders.json")
def test_leaders_by_the_leader_rule(case: dict[str, Any]) -> None:
    previous = case.get("previous")
    assumed = None if previous is None else as_leader(previous)
    assert not isinstance(assumed, str)
    got = leader_view([as_seen(n) for n in case["nodes"]], case["needed"], assumed)
    assert got == as_leader(case["leader"])
    for node in case["nodes"]:
        if isinstance(node, dict):
            id_, value = split_owner(node["owner"])
            assert (f"{id_} {value}" if value else id_) == node["owner"]


def commit_outcome(pinned: Any) -> cm.Outcome:
    """What commits.json calls an outcome, as this client's machine states it."""
    if pinned == "pending":
        return cm.PENDING
    if pinned == "lost":
        return cm.LOST
    return cm.Committed(int(pinned["committed"]))


@table("commits.json")
def test_deferred_commits(case: dict[str, Any]) -> None:
    nodes, start = case["nodes"], case["start"]
    owed = cm.owed(case["policy"] == "no_wait", nodes, case["fencing"])
    assert owed == case["owed"]
    valid = case.get("valid", True)
    if not owed or not valid:
        got = cm.Committed(int(case["token"])) if valid else cm.LOST
        assert got == commit_outcome(start["outcome"])
        assert "fence" not in start
        return
    commit, asked = cm.Commit.start(nodes, case["needed"], int(case["token"]), case["holding"])
    assert asked == start["fence"]["nodes"]
    assert commit.token == int(start["fence"]["token"])
    assert commit.outcome == commit_outcome(start["outcome"])
    for step in case["script"]:
        fenced = step["fenced"]
        got = commit.on_fenced(fenced["node"], fenced["answer"] == "committed")
        assert got == commit_outcome(step["outcome"]), step


SET_OPERATIONS = {
    "acquire": lambda s, c: cmds.acquire(s, c["owner"], c["ttl_ms"], Kind()),
    "acquire_wait": lambda s, c: cmds.wait(s, c["owner"], c["ttl_ms"], 5000, 7, Kind()),
    "release": lambda s, c: cmds.release(s, c["owner"]),
    "extend": lambda s, c: cmds.extend(s, c["owner"], c["ttl_ms"]),
    "fence": lambda s, c: cmds.fence(s, c["owner"], 42, c["ttl_ms"]),
}


@table("sets.json")
def test_sets_checked_sent_and_grouped(case: dict[str, Any]) -> None:
    """A set refused before any I/O, or the exact command of each operation and its Cluster groups."""
    if not case["accepted"]:
        with pytest.raises(ValueError):
            check_set(case["resources"], case["modes"])
        return
    keys = check_set(case["resources"], case["modes"])
    for operation, expected in case["commands"].items():
        assert [str(arg) for arg in SET_OPERATIONS[operation](keys, case)] == expected, operation
    assert groups(keys.keys) == case["groups"]
    assert cmds.key_of(cmds.acquire(keys, case["owner"], case["ttl_ms"], Kind())) == case["resources"][0]
    parts = split(keys)  # each group a set of its own, its keys' modes as given
    assert [list(part.keys) for part in parts] == case["groups"]
    modes = dict(zip(keys.keys, keys.modes or "x" * len(keys.keys), strict=True))
    for part in parts:
        assert (part.modes or "x" * len(part.keys)) == "".join(modes[key] for key in part.keys)
