"""conformance/errors.json against real servers, in both flavours: the class of each failure and
the words of its message (the Rust client, the CLI and the Node client run the same table)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cluster import Server, free_port, launch
from secure import Pki, TLSServer

import dlock
import dlock.asyncio

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[2] / "conformance" / "errors.json").read_text()
)["cases"]
#: The password of the `password` servers (in their config file, not in argv).
PASSWORD = "right-password"
CLASSES: dict[str, type[BaseException] | tuple[type[BaseException], ...]] = {
    "no_quorum": dlock.NoQuorum,
    "invalid_argument": ValueError,
    "contended": dlock.LockContended,
    "wrong_kind": dlock.WrongKindError,
}


@contextmanager
def server_for(case: dict[str, Any], pki: Pki) -> Iterator[int]:
    """The case's server, stopped afterwards; its port."""
    kind = case["server"]
    if kind == "none":
        yield free_port()
        return
    made = TLSServer(pki) if kind == "tls" else Server()
    launch([made])
    if kind == "password":  # set once started: the harness checks readiness without one
        made.client().config_set("requirepass", PASSWORD)
    for name, value in case.get("config", {}).items():
        made.client().config_set(name, value)
    try:
        yield made.port
    finally:
        made.stop()


def kind_of(value: Any) -> dict[str, Any]:
    return {"limit": value["limit"]} if isinstance(value, dict) else {}


def check(case: dict[str, Any], url: str, port: int, error: BaseException) -> None:
    assert isinstance(error, CLASSES[case["error"]]), f"{case['situation']}: {error!r}"
    if case["error"] == "contended":
        assert isinstance(error, dlock.LockTimeout) == (case["wait_ms"] is not None)
    said = str(error)
    for word in case["words"]:
        assert word.replace("{node}", url).replace("{port}", str(port)) in said, said
    for word in case.get("absent", []):
        assert word.replace("{node}", url).replace("{port}", str(port)) not in said, said


def urls_of(case: dict[str, Any], port: int) -> list[str]:
    """The case's nodes: `url` is one URL or a list of them."""
    given = case["url"] if isinstance(case["url"], list) else [case["url"]]
    return [url.replace("{port}", str(port)) for url in given]


def asked(case: dict[str, Any]) -> tuple[str, float]:
    """The resource and TTL (seconds) the case asks for."""
    return case.get("resource", "r"), case.get("ttl_ms", 10_000) / 1000


def in_time(case: dict[str, Any], started: float) -> None:
    """The call ended within the case's `within_ms`, if it has one, however long it may wait."""
    took_ms = (time.monotonic() - started) * 1000
    if "within_ms" in case:
        assert took_ms <= case["within_ms"], f"{case['situation']}: took {took_ms:.0f} ms"


def fail_sync(case: dict[str, Any], urls: list[str]) -> BaseException:
    password = {"password": case["password"]} if "password" in case else {}
    url = urls[0]
    try:
        locks = dlock.LockManager(urls, timeout=case["timeout_ms"] / 1000, **password)
        held = case.get("held")
        with dlock.LockManager([url]) as other:
            resource, ttl = asked(case)
            if held is not None:
                other.try_lock(resource, ttl=30.0, **kind_of(held))
            wait = case["wait_ms"]
            started = time.monotonic()
            try:
                if wait is None:
                    locks.try_lock(resource, ttl=ttl, **kind_of(case.get("ask")))
                else:
                    locks.lock(resource, ttl=ttl, wait=wait / 1000, **kind_of(case.get("ask")))
            finally:
                in_time(case, started)
    except Exception as error:
        return error
    raise AssertionError(f"{case['situation']}: taken")


async def fail_async(case: dict[str, Any], urls: list[str]) -> BaseException:
    password = {"password": case["password"]} if "password" in case else {}
    url = urls[0]
    try:
        locks = dlock.asyncio.LockManager(urls, timeout=case["timeout_ms"] / 1000, **password)
        async with dlock.asyncio.LockManager([url]) as other:
            held = case.get("held")
            resource, ttl = asked(case)
            if held is not None:
                await other.try_lock(resource, ttl=30.0, **kind_of(held))
            started = time.monotonic()
            try:
                wait = case["wait_ms"]
                if wait is None:
                    await locks.try_lock(resource, ttl=ttl, **kind_of(case.get("ask")))
                else:
                    await locks.lock(resource, ttl=ttl, wait=wait / 1000, **kind_of(case.get("ask")))
            finally:
                in_time(case, started)
                await locks.close()
    except Exception as error:
        return error
    raise AssertionError(f"{case['situation']}: taken")


@pytest.mark.parametrize("case", CASES, ids=[c["situation"] for c in CASES])
def test_every_client_says_the_same_about_each_failure(case: dict[str, Any], pki: Pki) -> None:
    with server_for(case, pki) as port:
        urls = urls_of(case, port)
        check(case, urls[0], port, fail_sync(case, urls))
    with server_for(case, pki) as port:
        urls = urls_of(case, port)
        check(case, urls[0], port, asyncio.run(fail_async(case, urls)))
