"""A Redis Cluster over TLS as one quorum node (`rediss+cluster://`): three TLS-only masters
(`--tls-cluster yes`: the bus speaks TLS too, and CLUSTER SLOTS announces the TLS ports), asking
for client certificates, with only the ACL user. The client reaches each master as it reaches
the seed: TLS with the manager's context, the host name (127.0.0.1) checked, the same user."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from cluster import CLUSTER_CONFIG, cluster_port, launch
from conftest import eventually
from secure import PASSWORD, USER, Pki, TLSServer, tls_keywords

import dlock
import dlock.asyncio

SLOT_RANGES = ((0, 5460), (5461, 10922), (10923, 16383))


@pytest.fixture(scope="module")
def tls_cluster(pki: Pki) -> Iterator[list[TLSServer]]:
    """Three masters, no replicas, the slots split between them by hand (redis-cli would need
    the password in its environment or argv)."""
    taken: set[int] = set()
    nodes = [TLSServer(pki, config=(*CLUSTER_CONFIG, "--tls-cluster", "yes")) for _ in SLOT_RANGES]
    for node in nodes:
        node.port = cluster_port(taken)  # its bus port (+10000) free too
    try:
        launch(nodes)
        for node, (first, last) in zip(nodes, SLOT_RANGES, strict=True):
            node.client().execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
            node.client().execute_command("CLUSTER", "MEET", "127.0.0.1", nodes[0].port)
        eventually(lambda: all(cluster_ok(n) for n in nodes), 20, "cluster ok")
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def cluster_ok(node: TLSServer) -> bool:
    return b"cluster_state:ok" in node.client().execute_command("CLUSTER", "INFO")


def owner(nodes: list[TLSServer], key: str) -> TLSServer:
    slot = nodes[0].client().execute_command("CLUSTER", "KEYSLOT", key)
    return next(n for n, (first, last) in zip(nodes, SLOT_RANGES, strict=True) if first <= slot <= last)


def test_a_tls_cluster_is_one_quorum_node(tls_cluster: list[TLSServer], pki: Pki) -> None:
    key = next(k for k in (f"c{i}" for i in range(100)) if owner(tls_cluster, k) is not tls_cluster[0])
    seed = f"rediss+cluster://127.0.0.1:{tls_cluster[0].port}"  # not the key's master
    locks = dlock.LockManager([seed], **tls_keywords(pki, replica_ack="off"))  # type: ignore[arg-type]
    with locks.lock(key, ttl=10.0, wait=1.0) as lock:
        assert owner(tls_cluster, key).client().execute_command("DLOCK.STATUS", key)[3] == lock.token()
        assert [v.info.token for v in locks.status(key) if v.info] == [lock.token()]
        lock.extend(20.0)

    async def test() -> None:
        alocks = dlock.asyncio.LockManager([seed], **tls_keywords(pki, replica_ack="off"))  # type: ignore[arg-type]
        async with alocks, alocks.lock(key, ttl=10.0, wait=1.0) as lock:
            assert [v.info.token for v in await alocks.status(key) if v.info] == [await lock.token()]

    asyncio.run(test())
    locks.close()


def test_a_tls_cluster_refusal_names_the_master_and_the_tls_problem(tls_cluster: list[TLSServer], pki: Pki) -> None:
    """The seed's URL credentials reach every master; a wrong CA fails at the seed, said as TLS."""
    seed = f"rediss+cluster://{USER}:{PASSWORD}@127.0.0.1:{tls_cluster[1].port}"
    keywords = tls_keywords(pki, ssl_ca_certs=pki["other_ca.crt"], username=None, password=None)
    untrusted = r"cannot read the slot map .*TLS: the server's certificate is not trusted"
    with pytest.raises(dlock.NoQuorum, match=untrusted):
        dlock.LockManager([seed], **keywords).try_lock("c")  # type: ignore[arg-type]
    keywords = tls_keywords(pki, username=None, password=None, replica_ack=0)
    with dlock.LockManager([seed], **keywords) as locks:  # type: ignore[arg-type]
        locks.try_lock("c", ttl=5.0).release()
        assert PASSWORD not in str(locks.nodes)
