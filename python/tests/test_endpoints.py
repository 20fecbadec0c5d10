"""The pure parts of connectivity: node URLs parsed and named with passwords hidden
(_endpoints.py, _security.redact), the sentinels' and masters' replies read (_sentinel.py), and
connection failures said in words (_diagnosis.py)."""

from __future__ import annotations

import ssl

import pytest
import redis

from dlock._pure.connect import Login, Security, redact
from dlock._pure.diagnosis import Explained, diagnose
from dlock._pure.sentinel import master_address, not_a_master
from dlock._pure.urls import SentinelGroup, Single, check_nodes, single_kwargs


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://app:s3cret@h:6379/2", "redis://app:***@h:6379/2"),
        ("rediss://:s3cret@h:6379", "rediss://:***@h:6379"),
        ("redis://h:6379?password=s3cret&db=1", "redis://h:6379?password=***&db=1"),
        ("redis+sentinel://app:s3:cret@a:1,b:2/m", "redis+sentinel://app:***@a:1,b:2/m"),
        ("unix://app:s3cret@/run/redis.sock", "unix://app:***@/run/redis.sock"),
        ("redis://h:6379", "redis://h:6379"),
        ("redis://app@h:6379", "redis://app@h:6379"),
    ],
)
def test_passwords_are_hidden_in_node_names(url: str, shown: str) -> None:
    assert redact(url) == shown


def test_sentinel_urls() -> None:
    [group] = check_nodes(["rediss+sentinel://app:p%40ss@10.0.0.1,[::1]:26380,h:5/my%20master"], redis.Redis)
    assert isinstance(group, SentinelGroup)
    assert group.sentinels == (("10.0.0.1", 26379), ("::1", 26380), ("h", 5))
    assert (group.service, group.tls, group.login) == ("my master", True, Login("app", "p@ss"))
    assert group.name == "rediss+sentinel://app:***@10.0.0.1,[::1]:26380,h:5/my%20master"
    assert "p@ss" not in repr(group)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis+sentinel://h:1", "the master's name is required"),
        ("redis+sentinel://h:1/m/0", "the master's name is required"),
        ("redis+sentinel://h:1/m?db=2", "query parameters are not supported"),
        ("redis+sentinel://app@h:1/m", "a user name needs a password"),
        ("redis+sentinel://h:x/m", "bad sentinel address 'h:x'"),
        ("redis+sentinel://h:1,,g:2/m", "bad sentinel address ''"),
        ("redis://h:1?ssl_cert_reqs=none", "query parameter 'ssl_cert_reqs' is not supported"),
        ("unix://", "a socket path is required"),
        ("redis://h:1?db=x", "Invalid value for .db. in connection URL"),
    ],
)
def test_bad_node_urls(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        check_nodes([url], redis.Redis)


def test_the_managers_login_applies_to_urls_without_credentials_only() -> None:
    keyword = Security(login=Login("app", "kw"))
    [bare, own] = check_nodes(["redis://h:1/2", "redis://me:mine@h:2"], redis.Redis)
    assert isinstance(bare, Single) and isinstance(own, Single)
    assert single_kwargs(bare, keyword) == {"host": "h", "port": 1, "db": 2, "username": "app", "password": "kw"}
    assert single_kwargs(own, keyword) == {"host": "h", "port": 2, "username": "me", "password": "mine"}


def test_what_a_sentinel_says_of_the_master() -> None:
    up = [b"name", b"m", b"ip", b"10.0.0.2", b"port", b"6380", b"flags", b"master"]
    assert master_address("m", up) == ("10.0.0.2", 6380)
    assert master_address("m", {"ip": "h", "port": "1", "flags": "master,disconnected"}) == ("h", 1)
    down = [b"ip", b"10.0.0.2", b"port", b"6380", b"flags", b"master,s_down,o_down"]
    assert master_address("m", down) == "sees 10.0.0.2:6380 as master,s_down,o_down"
    assert master_address("m", [b"ip"]) == "unexpected SENTINEL MASTER reply for 'm'"


def test_a_server_the_sentinels_name_must_say_it_is_the_master() -> None:
    assert not_a_master(("h", 1), [b"master", 3129, []]) is None
    said = not_a_master(("h", 1), [b"slave", b"10.0.0.3", 6379, b"connected", 3129])
    assert said == "h:1, named master by the sentinels, is a slave (a failover under way?)"


def raised(error: BaseException, during: BaseException) -> BaseException:
    """`error` as raised while handling `during` (redis-py's wrapping)."""
    try:
        try:
            raise during
        except BaseException:
            raise error  # noqa: B904 - the implicit context is what redis-py leaves
    except BaseException as e:
        return e


def test_connection_failures_are_said_in_words() -> None:
    wrapped = redis.ConnectionError("Error 1 connecting to h:1. [SSL: ...]")
    verify = ssl.SSLCertVerificationError(1, "certificate verify failed")
    verify.verify_message = "unable to get local issuer certificate"
    said = diagnose(raised(wrapped, verify))
    assert (
        said
        == "TLS: the server's certificate is not trusted (unable to get local issuer certificate): check ssl_ca_certs"
    )
    alert = ssl.SSLError(1, "[SSL: TLSV13_ALERT_CERTIFICATE_REQUIRED] tlsv13 alert certificate required")
    alert.reason = "TLSV13_ALERT_CERTIFICATE_REQUIRED"
    assert "requires a client certificate" in str(diagnose(raised(redis.ConnectionError("x"), alert)))
    closed = raised(Explained("guessed"), ssl.SSLEOFError(8, "EOF occurred in violation of protocol"))
    assert diagnose(closed) == "guessed"  # a bare EOF says less than the connection's guess
    wrong = redis.AuthenticationError("invalid username-password pair or user is disabled.")
    assert diagnose(wrong) == (
        "authentication failed (wrong user or password): give the right user and password"
        " (username= and password=, or user:password@ in the URL)"
    )
    refused = raised(
        redis.ConnectionError("Error 111 connecting to h:1. Connection refused."), ConnectionRefusedError()
    )
    assert diagnose(refused) == "connection refused: is the server running, and is the port right?"
    assert diagnose(redis.ConnectionError("Error 22 connecting to h:1. Invalid argument.")) is None
