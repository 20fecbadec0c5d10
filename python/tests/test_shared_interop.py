"""Shared locks and semaphores across languages: holders taken by the Rust CLI (`dlock acquire
--shared`, `--limit N`) and by Python on one resource see each other. Skipped, saying so, when
the built CLI has no --shared yet."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from cluster import CLI, Server, start
from conftest import free_everywhere, urls

import dlock


def cli_has_kinds() -> bool:
    assert CLI.exists(), f"{CLI} is missing: run `make build` (or set DLOCK_CLI)"
    shown = subprocess.run([str(CLI), "acquire", "--help"], capture_output=True, text=True, check=True)
    return "--shared" in shown.stdout and "--limit" in shown.stdout


@pytest.fixture(params=[1, 5], ids=["1-master", "5-masters"])
def masters(request: pytest.FixtureRequest) -> Iterator[list[Server]]:
    if not cli_has_kinds():
        pytest.skip(f"{CLI} has no `acquire --shared` / `--limit` (built before the CLI learned them)")
    servers = start(request.param)
    yield servers
    for server in servers:
        server.stop()


def cli_acquire(servers: list[Server], resource: str, *kind: str) -> subprocess.CompletedProcess[str]:
    nodes = ",".join(urls(servers))
    command = [str(CLI), "acquire", resource, "--nodes", nodes, "--timeout", "500ms", "--ttl", "30s", *kind]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_shared_holders_of_both_languages_see_each_other(masters: list[Server]) -> None:
    locks = dlock.LockManager(urls(masters), timeout=0.5)
    taken = cli_acquire(masters, "rw", "--shared")
    assert taken.returncode == 0, taken.stderr
    cli_owner, cli_token, _ = taken.stdout.split()
    reader = locks.try_lock("rw", ttl=10.0, shared=True)  # readers together
    assert reader.token() > int(cli_token)
    with pytest.raises(dlock.LockContended):
        locks.try_lock("rw", ttl=10.0)  # no writer beside the CLI's reader
    for view in locks.status("rw"):
        assert view.info is not None and view.info.kind == "shared"
        assert {h.owner for h in view.info.holders} == {cli_owner, reader.owner}
    writer = cli_acquire(masters, "rw")
    assert writer.returncode == 3, (writer.returncode, writer.stdout, writer.stderr)  # contended
    reader.release()
    assert locks.release_owner("rw", cli_owner) == len(masters)
    assert free_everywhere(masters, "rw")


def test_a_semaphore_shared_by_both_languages_keeps_its_limit(masters: list[Server]) -> None:
    locks = dlock.LockManager(urls(masters), timeout=0.5)
    taken = cli_acquire(masters, "sem", "--limit", "2")
    assert taken.returncode == 0, taken.stderr
    cli_owner = taken.stdout.split()[0]
    permit = locks.try_lock("sem", ttl=10.0, limit=2)
    with pytest.raises(dlock.LockContended):
        locks.try_lock("sem", ttl=10.0, limit=2)  # both permits are taken
    full = cli_acquire(masters, "sem", "--limit", "2")
    assert full.returncode == 3, (full.returncode, full.stdout, full.stderr)
    other = cli_acquire(masters, "sem", "--limit", "3")
    assert other.returncode == 7 and "WRONGKIND" in other.stderr, (other.returncode, other.stderr)  # exit 7: wrong kind
    with pytest.raises(dlock.WrongKindError):
        locks.try_lock("sem", ttl=10.0, limit=3)
    for view in locks.status("sem"):
        assert view.info is not None and (view.info.kind, view.info.limit) == ("semaphore", 2)
        assert {h.owner for h in view.info.holders} == {cli_owner, permit.owner}
        assert {h.mode for h in view.info.holders} == {"permit"}
    permit.release()
    assert locks.release_owner("sem", cli_owner, limit=2) == len(masters)
    assert free_everywhere(masters, "sem")
