"""TLS with client certificates and ACL users, sync and asyncio, against redis-servers that speak
only TLS (`--port 0 --tls-port P`), ask every client for a certificate (`--tls-auth-clients
yes`) and know only an ACL user. Every refusal is a per-node failure naming what went wrong,
within the per-node timeout; bad files are refused before any node is asked; no password shows."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cluster import Server, launch
from conftest import free_everywhere, status, urls
from secure import KEY_PASS_PHRASE, PASSWORD, USER, Pki, TLSServer, tls_keywords

import dlock
import dlock.asyncio


def test_a_tls_quorum_locks_hands_over_extends_and_keeps_a_watchdog(tls_three: list[TLSServer], pki: Pki) -> None:
    locks = dlock.LockManager(urls(tls_three), **tls_keywords(pki))  # type: ignore[arg-type]
    other = dlock.LockManager(urls(tls_three), **tls_keywords(pki))  # type: ignore[arg-type]
    handed: list[int] = []
    with locks.lock("tls", ttl=0.6, wait=1.0, watchdog=True) as lock:
        assert [status(s, "tls")["token"] for s in tls_three].count(lock.token()) >= 2  # type: ignore[index]
        with pytest.raises(dlock.LockContended):
            other.try_lock("tls", ttl=1.0)
        waiter = threading.Thread(target=lambda: handed.append(other.lock("tls", ttl=5.0, wait=5.0).token()))
        waiter.start()  # queued on the nodes (a wait on a TLS connection of its own)
        time.sleep(1.5)  # 2.5 TTLs: the watchdog extends it
        assert [v.info.token for v in locks.status("tls") if v.info].count(lock.token()) >= 2  # held, one token
        lock.stop_watchdog()  # or it would extend it again by its TTL
        lock.extend(30.0)
        assert sum(s.client().pttl("tls") > 29_000 for s in tls_three) >= 2
    waiter.join(5.0)
    assert handed and handed[0] > lock.token()  # granted at the release, a later token
    other.release_owner("tls", next(v.info.owner for v in other.status("tls") if v.info))
    assert free_everywhere(tls_three, "tls")
    locks.close()
    other.close()


def test_a_tls_quorum_in_asyncio(tls_three: list[TLSServer], pki: Pki) -> None:
    async def test() -> None:
        locks = dlock.asyncio.LockManager(urls(tls_three), **tls_keywords(pki))  # type: ignore[arg-type]
        other = dlock.asyncio.LockManager(urls(tls_three), **tls_keywords(pki))  # type: ignore[arg-type]
        lock = await locks.lock("tls-async", ttl=0.6, wait=1.0, watchdog=True)
        waiter = asyncio.ensure_future(other.lock("tls-async", ttl=5.0, wait=5.0))
        await asyncio.sleep(1.5)  # the watchdog extends it; the waiter waits on the nodes
        assert [v.info.token for v in await locks.status("tls-async") if v.info].count(await lock.token()) >= 2
        await lock.stop_watchdog()
        await lock.extend(30.0)
        assert sum(s.client().pttl("tls-async") > 29_000 for s in tls_three) >= 2
        await lock.release()
        handed = await asyncio.wait_for(waiter, 5.0)
        assert await handed.token() > await lock.token()
        await handed.release()
        assert free_everywhere(tls_three, "tls-async")
        await locks.close()
        await other.close()

    asyncio.run(test())


def test_credentials_in_the_url_win_over_the_keywords(tls_three: list[TLSServer], pki: Pki) -> None:
    nodes = [f"rediss://{USER}:{PASSWORD}@127.0.0.1:{s.port}" for s in tls_three]
    locks = dlock.LockManager(nodes, **tls_keywords(pki, password="not-this-one"))  # type: ignore[arg-type]
    with locks.lock("url-login", ttl=5.0) as lock:
        assert lock.token() > 0
    assert locks.nodes == [f"rediss://{USER}:***@127.0.0.1:{s.port}" for s in tls_three]
    locks.close()


def plain(nodes: list[str]) -> list[str]:
    return [url.replace("rediss://", "redis://") for url in nodes]


def by_name(nodes: list[str]) -> list[str]:
    return [url.replace("127.0.0.1", "localhost") for url in nodes]


#: A server refusing the client certificate sends an alert after the TLS 1.3 handshake; when the
#: client reads a reset before it, the failure says what the closed connection probably means.
CLIENT_CERTIFICATE = r"TLS: .*client certificate"

REFUSALS: dict[str, tuple[Callable[[list[str]], list[str]], dict[str, object], str]] = {
    # case: (how the URLs change, how the keywords change, what each node's failure says: a regex)
    "untrusted server": (list, {"ssl_ca_certs": "other_ca.crt"}, "TLS: the server's certificate is not trusted"),
    "no client certificate": (list, {"ssl_certfile": None, "ssl_keyfile": None}, CLIENT_CERTIFICATE),
    "untrusted client": (list, {"ssl_certfile": "stranger.crt", "ssl_keyfile": "stranger.key"}, CLIENT_CERTIFICATE),
    "plain to a TLS port": (plain, {}, r"connection reset during the handshake: is it a TLS port\? then use rediss://"),
    "wrong host name": (by_name, {}, r"TLS: the server's certificate is not for the host asked for \(Hostname mis"),
    "wrong password": (
        list,
        {"password": "wrong-pw"},
        r"authentication failed \(wrong user or password\): give the right user",
    ),
    "no password": (list, {"username": None, "password": None}, r"authentication required \(NOAUTH\)"),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_each_refusal_is_a_node_failure_naming_it(tls_three: list[TLSServer], pki: Pki, case: str) -> None:
    change_urls, changes, says = REFUSALS[case]
    nodes = change_urls(urls(tls_three))
    keywords = tls_keywords(pki, **{k: pki[v] if isinstance(v, str) and "." in v else v for k, v in changes.items()})

    def check(error: dlock.NoQuorum, elapsed: float) -> None:
        assert [f.node for f in error.failures] == nodes
        assert all(re.search(says, f.reason) for f in error.failures), error
        assert elapsed < 1.5  # within the 0.5 s per-node timeout (and some scheduling)
        assert PASSWORD not in f"{error!s}{error!r}{error.failures!r}" and "wrong-pw" not in str(error)

    started = time.monotonic()
    with pytest.raises(dlock.NoQuorum) as caught:
        dlock.LockManager(nodes, **keywords).try_lock("refused")  # type: ignore[arg-type]
    check(caught.value, time.monotonic() - started)

    async def attempt() -> None:
        locks = dlock.asyncio.LockManager(nodes, **keywords)  # type: ignore[arg-type]
        try:
            await locks.try_lock("refused")
        finally:
            await locks.close()

    started = time.monotonic()
    with pytest.raises(dlock.NoQuorum) as caught:
        asyncio.run(attempt())
    check(caught.value, time.monotonic() - started)


def test_tls_to_a_port_without_tls_times_out_within_the_node_timeout(one: Server, pki: Pki) -> None:
    """A plain port never answers the TLS handshake: each call (try_lock's acquire, its one
    re-ask, the release) bounded by the per-node timeout, and named as such by the sync flavour
    (asyncio's own time bound fires first: 'timed out')."""
    node = [f"rediss://127.0.0.1:{one.port}"]
    keywords = tls_keywords(pki, timeout=0.2, username=None, password=None)
    started = time.monotonic()
    with pytest.raises(dlock.NoQuorum, match=r"no TLS handshake in time: a port without TLS\? then use redis://"):
        dlock.LockManager(node, **keywords).try_lock("r")  # type: ignore[arg-type]
    assert time.monotonic() - started < 3 * 0.2 + 0.3

    async def attempt() -> None:
        await dlock.asyncio.LockManager(node, **keywords).try_lock("r")  # type: ignore[arg-type]

    started = time.monotonic()
    with pytest.raises(dlock.NoQuorum, match="timed out"):
        asyncio.run(attempt())
    assert time.monotonic() - started < 3 * 0.2 + 0.3


def test_without_ssl_ca_certs_the_system_roots_are_trusted_and_cert_reqs_none_trusts_any(
    tls_three: list[TLSServer], pki: Pki
) -> None:
    with pytest.raises(dlock.NoQuorum, match="certificate is not trusted"):
        dlock.LockManager(urls(tls_three), **tls_keywords(pki, ssl_ca_certs=None)).try_lock("r")  # type: ignore[arg-type]
    unchecked = tls_keywords(pki, ssl_ca_certs=None, ssl_cert_reqs="none")  # encrypted, server unverified
    with dlock.LockManager(by_name(urls(tls_three)), **unchecked) as locks:  # type: ignore[arg-type]
        locks.try_lock("unchecked", ttl=5.0).release()


def test_an_encrypted_client_key_is_read_with_ssl_password(tls_three: list[TLSServer], pki: Pki) -> None:
    keywords = tls_keywords(pki, ssl_keyfile=pki["client.enc.key"], ssl_password=KEY_PASS_PHRASE)
    with dlock.LockManager(urls(tls_three), **keywords) as locks:  # type: ignore[arg-type]
        locks.try_lock("encrypted-key", ttl=5.0).release()
    assert KEY_PASS_PHRASE not in repr(locks.__dict__)


BAD_FILES: dict[str, tuple[dict[str, str | None], str]] = {
    # case: (keywords, with {file} standing for the path, what the ValueError says)
    "certificate without key": ({"ssl_certfile": "client.crt"}, "ssl_certfile {file} holds no private key"),
    "key without certificate": ({"ssl_keyfile": "client.key"}, "ssl_keyfile {file} is given without ssl_certfile"),
    "missing file": ({"ssl_ca_certs": "nowhere.crt"}, "ssl_ca_certs {file} cannot be read: No such file"),
    "a directory": ({"ssl_ca_certs": "."}, "ssl_ca_certs {file} cannot be read: Is a directory"),
    "garbage CA": ({"ssl_ca_certs": "garbage.pem"}, "ssl_ca_certs {file} holds no PEM certificate"),
    "garbage certificate": (
        {"ssl_certfile": "garbage.pem", "ssl_keyfile": "client.key"},
        "ssl_certfile {file} holds no PEM certificate",
    ),
    "key of another certificate": (
        {"ssl_certfile": "client.crt", "ssl_keyfile": "stranger.key"},
        "ssl_keyfile {file} does not belong to the certificate",
    ),
    "encrypted key, no pass phrase": (
        {"ssl_certfile": "client.crt", "ssl_keyfile": "client.enc.key"},
        "ssl_keyfile {file} is encrypted: give its pass phrase as ssl_password",
    ),
    "encrypted key, wrong pass phrase": (
        {"ssl_certfile": "client.crt", "ssl_keyfile": "client.enc.key", "ssl_password": "nope"},
        "ssl_keyfile {file}: ssl_password does not decrypt it",
    ),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_bad_tls_files_are_refused_naming_the_file_before_any_node_is_asked(pki: Pki, case: str) -> None:
    given, says = BAD_FILES[case]
    keywords = {k: v if k == "ssl_password" or v is None else str(pki.dir / v) for k, v in given.items()}
    named = next(v for k, v in keywords.items() if k in says and k != "ssl_password")
    with Listening() as node:
        for manager in (dlock.LockManager, dlock.asyncio.LockManager):
            with pytest.raises(ValueError) as caught:
                manager([node], **keywords)  # type: ignore[arg-type]
            assert says.format(file=repr(named)) in str(caught.value)
            assert "nope" not in str(caught.value)


@pytest.mark.parametrize(
    ("keywords", "error", "says"),
    [
        ({"ssl_cert_reqs": "strict"}, ValueError, "ssl_cert_reqs must be 'required', 'optional', 'none'"),
        ({"ssl_check_hostname": "yes"}, TypeError, "ssl_check_hostname must be True or False"),
        ({"ssl_ca_certs": 42}, TypeError, "ssl_ca_certs must be a file path"),
        ({"username": "app"}, ValueError, "username needs password"),
        ({"sentinel_username": "app"}, ValueError, "sentinel_username needs sentinel_password"),
        ({"password": b"x"}, TypeError, "password must be a str or None"),
    ],
)
def test_bad_security_keywords_are_refused(keywords: dict[str, object], error: type[Exception], says: str) -> None:
    with Listening() as node:
        for manager in (dlock.LockManager, dlock.asyncio.LockManager):
            with pytest.raises(error, match=says):
                manager([node], **keywords)  # type: ignore[arg-type]


class Listening:
    """A listening socket standing for a node: whatever is refused must leave it unasked."""

    def __enter__(self) -> str:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen()
        self.socket.setblocking(False)
        return f"rediss://127.0.0.1:{self.socket.getsockname()[1]}"

    def __exit__(self, *_: object) -> None:
        with pytest.raises(BlockingIOError):
            self.socket.accept()
        self.socket.close()


def test_no_password_in_messages_reprs_names_or_the_servers_argv(tls_three: list[TLSServer], pki: Pki) -> None:
    secret_url = f"rediss://{USER}:{PASSWORD}@127.0.0.1:{tls_three[0].port}"
    locks = dlock.LockManager([secret_url], **tls_keywords(pki, password=PASSWORD))  # type: ignore[arg-type]
    shown = [repr(locks.__dict__), repr(locks.nodes), repr(locks.status("r")), repr(locks._backend.nodes.members)]
    for bad in (
        f"{secret_url}/3?password={PASSWORD}",
        f"redis+cluster://{USER}:{PASSWORD}@h:1/2",
        f"redis+sentinel://{USER}:{PASSWORD}@h:1",
    ):
        with pytest.raises(ValueError) as caught:
            dlock.LockManager([bad])
        shown.append(str(caught.value))
    assert not any(PASSWORD in text for text in shown), shown
    for server in tls_three:
        assert server.process is not None
        assert PASSWORD not in Path(f"/proc/{server.process.pid}/cmdline").read_text()
    locks.close()


def test_a_paused_tls_node_does_not_hold_up_the_others(pki: Pki) -> None:
    """The kernel accepts a TCP connection for a SIGSTOPped server, whose TLS handshake then
    never ends: connecting to it (up to the per-node timeout) must neither eat the time of the
    nodes asked with it nor delay connecting to them."""
    servers = launch([TLSServer(pki) for _ in range(3)])
    keywords = tls_keywords(pki, timeout=0.3)
    try:
        servers[0].pause()
        started = time.monotonic()
        with dlock.LockManager(urls(servers), **keywords) as locks:  # type: ignore[arg-type]
            locks.try_lock("paused", ttl=5.0).release()
        assert time.monotonic() - started < 3 * 0.3 + 0.5  # acquire, the paused node re-asked, release

        async def attempt() -> None:
            async with dlock.asyncio.LockManager(urls(servers), **keywords) as alocks:  # type: ignore[arg-type]
                await (await alocks.try_lock("paused", ttl=5.0)).release()

        started = time.monotonic()
        asyncio.run(attempt())
        assert time.monotonic() - started < 3 * 0.3 + 0.5
    finally:
        for server in servers:
            server.stop()
