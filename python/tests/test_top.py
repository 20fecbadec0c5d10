"""LockManager.top() (the Rust crate's observe.rs), sync and asyncio, against real nodes: keys
with waiters and held locks per node, the keyspace walked in steps, bad rows refused, dead and
cluster nodes named; and the replies' shapes (RESP2 arrays, RESP3 maps)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from cluster import Server, free_port
from conftest import eventually, urls, waiters

import dlock
import dlock.asyncio
from dlock._pure.observe import Walk


def test_top_lists_waiting_and_held_locks_per_node(three: list[Server]) -> None:
    locks = dlock.LockManager(urls(three), timeout=0.5)
    held = locks.try_lock("orders", ttl=30.0)
    quiet = locks.try_lock("quiet", ttl=30.0)
    waiting = threading.Thread(target=lambda: locks.lock("orders", ttl=5.0, wait=20.0).release())
    waiting.start()
    eventually(lambda: all(waiters(s, "orders") for s in three), what="queued")
    tops = locks.top()
    assert [t.node for t in tops] == urls(three)
    for top in tops:
        assert top.failure is None and top.complete and top.held_total == 2
        assert [(q.resource, q.waiters) for q in top.waiting] == [("orders", 1)]
        holder = top.waiting[0].holder
        assert holder is not None and holder.owner == held.owner and 0 < holder.ttl_ms <= 30_000
        assert [h.resource for h in top.held] == ["orders", "quiet"], "most waiters first"
    assert len(locks.top(rows=1)[0].held) == 1
    held.release()
    waiting.join(timeout=10)
    quiet.release()


def test_the_asyncio_flavour_walks_a_keyspace_in_steps(one: Server) -> None:
    client = one.client()
    for i in range(0, 3000, 500):
        client.mset({f"plain:{j}": "x" for j in range(i, i + 500)})

    async def main() -> list[dlock.NodeTop]:
        async with dlock.asyncio.LockManager([one.url], timeout=0.5) as locks:
            for i in range(20):
                await locks.try_lock(f"lock:{i}", ttl=30.0)
            return await locks.top(rows=1000)

    [top] = asyncio.run(main())
    assert top.complete and top.held_total == 20 and top.waiting == []
    assert sorted(h.resource for h in top.held) == sorted(f"lock:{i}" for i in range(20))


def test_bad_rows_are_refused_and_unreachable_or_cluster_nodes_named(one: Server) -> None:
    dead = f"redis://127.0.0.1:{free_port()}"
    locks = dlock.LockManager([one.url, dead, "redis+cluster://127.0.0.1:1"], timeout=0.5)
    for rows in (0, 1001, "5", True):
        with pytest.raises(ValueError, match="rows must be"):
            locks.top(rows=rows)  # type: ignore[arg-type]
    ok, down, cluster = locks.top()
    assert ok.failure is None and ok.complete
    assert down.failure is not None and not down.complete
    assert cluster.failure is not None and "redis:// URL" in cluster.failure


def test_replies_read_as_resp2_arrays_or_resp3_maps_and_bad_ones_fail_the_node() -> None:
    walk = Walk(["a", "b", "c"], rows=5)
    calls = walk.requests()
    row = [b"k", 2, 30, None, None, None]
    resp2 = [b"cursor", b"0", b"waiting", [row], b"held", [[b"k", b"o", 7, 900, 1, 2, b"shared", b"extra"]]]
    resp3 = {"cursor": "0", "waiting": [], "held": []}
    walk.take(calls, [resp2, resp3, [b"cursor", b"0", b"held", [[b"short"]]]])
    a, b, c = walk.result()
    assert a.waiting[0].holder is None and a.waiting[0].oldest_wait_ms == 30
    assert a.held[0].holder.token == 7 and a.held[0].waiters == 2 and a.held[0].mode == "shared"
    assert b.complete and b.failure is None
    assert c.failure is not None and not c.complete
    assert walk.requests() == []
