"""Guarded writes against real processes: a holder SIGSTOPped past its lease, a newer holder
writing meanwhile, the old one resumed and writing. Its write is refused and the newer one
stands: through a gate on the data's Redis (DLOCK.GUARD) and through a fence column in a real
PostgreSQL; on one lock node and on five."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from cluster import Server, start
from conftest import urls
from guarded_holder import fenced_update
from postgres import Postgres

import dlock

HOLDER = Path(__file__).with_name("guarded_holder.py")


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    db = Postgres().start()
    yield db
    db.stop()


@pytest.fixture
def data() -> Iterator[Server]:
    """The data's own Redis (with the module, for its gates)."""
    server = start(1)[0]
    yield server
    server.stop()


def report_table(dsn: str) -> None:
    with psycopg.connect(dsn) as db:
        db.execute("DROP TABLE IF EXISTS report")
        db.execute("CREATE TABLE report (id INT PRIMARY KEY, body TEXT NOT NULL, fence BIGINT NOT NULL)")
        db.execute("INSERT INTO report VALUES (1, '', 0)")


def paused_holder(nodes: list[Server], target: str, where: str, write_fresh: object) -> str:
    """The timeline; returns what the resumed holder printed. `write_fresh(lock)` is the newer
    holder's write."""
    argv = [sys.executable, str(HOLDER), ",".join(urls(nodes)), target, where]
    holder = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        old_token = int(holder.stdout.readline())
        holder.send_signal(signal.SIGSTOP)
        time.sleep(0.8)  # past its 0.5 s lease
        with dlock.LockManager(urls(nodes), timeout=0.5) as locks, locks.lock("report", ttl=10.0, wait=5.0) as new:
            assert new.token() > old_token
            write_fresh(new)
        holder.send_signal(signal.SIGCONT)
        holder.stdin.write("write\n")
        holder.stdin.flush()
        said = holder.stdout.readline().strip()
        assert holder.wait(timeout=30) == 0
        return said
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("count", [1, 5])
def test_a_resumed_holders_write_is_refused_by_the_gate(count: int, data: Server) -> None:
    nodes = start(count)
    try:
        store = redis.Redis.from_url(data.url, decode_responses=True)
        said = paused_holder(
            nodes, "redis", data.url, lambda new: new.guarded(store, "report:gate", "SET", "report", "fresh")
        )
        assert said == "stale lost=True"
        assert store.get("report") == "fresh"
        assert store.execute_command("DLOCK.CHECK", "report:gate", 1) == 0  # the gate stands high
    finally:
        for server in nodes:
            server.stop()


@pytest.mark.parametrize("count", [1, 5])
def test_a_resumed_holders_write_is_refused_by_the_fence_row(count: int, postgres: Postgres) -> None:
    report_table(postgres.dsn)
    nodes = start(count)
    try:

        def fresh(new: dlock.Lock) -> None:
            with psycopg.connect(postgres.dsn) as db:
                assert fenced_update(db, new.token(), "fresh")

        assert paused_holder(nodes, "postgres", postgres.dsn, fresh) == "refused"
        with psycopg.connect(postgres.dsn) as db:
            assert db.execute("SELECT body FROM report").fetchone() == ("fresh",)
    finally:
        for server in nodes:
            server.stop()


def test_without_the_gate_the_resumed_holders_write_lands(data: Server) -> None:
    """Why the gate: the same timeline with a plain SET lets the stale write overwrite."""
    nodes = start(1)
    try:
        store = redis.Redis.from_url(data.url, decode_responses=True)
        with dlock.LockManager(urls(nodes), timeout=0.5) as locks:
            old = locks.try_lock("report", ttl=0.3)
            time.sleep(0.4)
            with locks.lock("report", ttl=10.0, wait=5.0):
                store.set("report", "fresh")
            store.set("report", f"stale from {old.token()}")  # nothing stops it
        assert store.get(
            "report",
        ).startswith("stale")
    finally:
        for server in nodes:
            server.stop()


def docs_sql() -> list[str]:
    """The statements of docs/fencing.md's PostgreSQL block, as written there."""
    page = (Path(__file__).resolve().parents[2] / "docs/fencing.md").read_text()
    block = page.split("### PostgreSQL", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    lines = [line for line in block.splitlines() if not line.startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def test_the_docs_postgresql_block_runs_and_fences(postgres: Postgres) -> None:
    with psycopg.connect(postgres.dsn, autocommit=True) as db:
        db.execute("DROP TABLE IF EXISTS report")
        for statement in docs_sql():
            db.execute(statement)  # type: ignore[arg-type]  # the page's own text

        def write(token: int, body: str) -> int:
            # EXECUTE takes no server-side parameters: the values are bound client-side.
            return psycopg.ClientCursor(db).execute("EXECUTE fenced_write(%s, %s)", (token, body)).rowcount

        assert write(1795443573949545, "new") == 1
        assert write(1795443573941002, "stale") == 0
        assert write(1795443573949545, "new again") == 1  # the holder's own token passes
        assert db.execute("SELECT body, fence FROM report").fetchone() == ("new again", 1795443573949545)
