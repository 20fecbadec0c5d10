"""The shared conformance table (conformance/*.json, format in conformance/README.md): every case
run against this client's pure functions. The Rust and Node suites run the same files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis

from dlock._pure import acquisition as acq
from dlock._pure.cluster import Seed, slot_of
from dlock._pure.kind import Kind
from dlock._pure.options import Options
from dlock._pure.timing import validity
from dlock._pure.urls import SentinelGroup, Single, endpoint
from dlock._pure.verdicts import (
    AttemptFailed,
    Count,
    Granted,
    Refused,
    Vote,
    commit_verdict,
    majority_token,
    nodes_worth_asking_again,
)
from dlock.errors import NodeFailure

TABLE = Path(__file__).resolve().parents[2] / "conformance"


def cases(name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads((TABLE / name).read_text())["cases"]
    assert found, f"{name} has no cases"
    return found


def label(case: dict[str, Any]) -> str:
    return str(case.get("name") or case.get("url") or json.dumps(case))


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


def vote(node: int, v: Any) -> Vote:
    if v == "refused":
        return Refused()
    if v == "failed":
        return NodeFailure(f"node {node}", "timed out")
    return Granted(int(v["grant"]))


def verdict(run: Any) -> Any:
    try:
        return {"held": str(run())}
    except AttemptFailed as failed:
        return {"contended": "contended", "no quorum": "no_quorum", "validity expired": "expired"}[failed.kind]


@table("rounds.json")
def test_round_verdicts(case: dict[str, Any]) -> None:
    votes = [vote(n, v) for n, v in enumerate(case["votes"])]
    nodes, needed = len(votes), kind(case).quorum(len(votes))
    assert nodes_worth_asking_again(votes, needed) == case["ask_again"]
    count = Count.of(votes)
    assert verdict(lambda: majority_token(nodes, needed, count)) == case["verdict"]
    if "fence" not in case:
        return
    refused = [
        NodeFailure(f"node {n}", "refused") for (n, _), ok in zip(count.grants, case["fence"], strict=True) if not ok
    ]

    def commit() -> int:
        commit_verdict(needed, count, refused, case["valid"])
        return majority_token(nodes, needed, count)

    assert verdict(commit) == case["committed"]


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


@table("urls.json")
def test_node_urls(case: dict[str, Any]) -> None:
    if not case["accepted"]:
        with pytest.raises(ValueError):
            endpoint(case["url"], redis.Redis)
        return
    made = endpoint(case["url"], redis.Redis)
    assert FORMS[type(made)] == case["form"]
    assert made.tls == case["tls"]
