"""Why a connection failed, in the words every dlock client uses (conformance/errors.json): what
failed, then what to do. Refused connections, TLS (certificate not trusted, host name, client
certificate wanted or refused, no TLS on the port) and authentication. redis-py wraps the ssl
module's errors in its own ConnectionError; the cause is found along the exception chain. No
message here carries a credential."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import redis

#: What an OpenSSL server sends when it wanted a client certificate and got none.
_NO_CLIENT_CERTIFICATE = ("TLSV13_ALERT_CERTIFICATE_REQUIRED",)
#: A TLS connection closed by the other end: says nothing of why (the connection may).
_CLOSED = (ssl.SSLEOFError, ssl.SSLZeroReturnError)
#: What a client reads when the other end does not speak TLS.
_NOT_TLS = ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST")

PLAIN_TO_TLS = "connection reset during the handshake: is it a TLS port? then use rediss://"
PAUSED = "or the server is paused or overloaded"
REFUSED = "connection refused: is the server running, and is the port right?"
NO_SOCKET = "no such socket: is the server running, and is the path right?"
#: How the Python client takes a user and password.
LOGIN = "username= and password=, or user:password@ in the URL"
REFUSED_AFTER_HANDSHAKE = (
    "TLS: the server closed the connection right after the handshake: it wants a client"
    " certificate (ssl_certfile, ssl_keyfile) or refused the one given"
)


class Explained(redis.ConnectionError):
    """A connection failure whose message already says what probably went wrong."""


class NamesEarlyClose:
    """Mixed into both transports' connection classes: a connection closed before its first
    reply is Explained as `closed_early` says (plain to a TLS port; TLS without the client
    certificate the server wants). The connections only report their failures here."""

    closed_early: str
    replied = False
    host: str
    port: int

    def failed(self, error: redis.RedisError, reading: bool) -> None:
        """After a send or a read failed: a read that failed with anything but a lost connection
        or a timeout got a reply (an error reply); raises the explanation, if there is one."""
        if reading:
            self.replied = self.replied or type(error) not in (redis.ConnectionError, redis.TimeoutError)
        if type(error) is redis.ConnectionError and not self.replied:
            raise Explained(self.closed_early) from error


def causes(error: BaseException) -> Iterator[BaseException]:
    """`error` and what it was raised from or during, innermost last."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def diagnose(error: BaseException) -> str | None:
    """What went wrong with TLS or authentication, if that is what `error` came from: the ssl
    module's own error first, then a connection's guess (Explained)."""
    chain = list(causes(error))
    for cause in chain:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return certificate_refused(cause)
        if isinstance(cause, ssl.SSLError) and not isinstance(cause, _CLOSED):
            return tls_failed(cause)
        if isinstance(cause, TimeoutError) and "handshake" in str(cause):
            return f"no TLS handshake in time: a port without TLS? then use redis:// ({PAUSED})"
        if isinstance(cause, redis.AuthenticationError):
            return authentication_failed(cause)
    explained = next((str(cause) for cause in chain if isinstance(cause, Explained)), None)
    if explained is None:
        explained = refused(chain)
    if explained is None and any(isinstance(cause, _CLOSED) for cause in chain):
        return "TLS: the server closed the connection"
    return explained


def refused(chain: list[BaseException]) -> str | None:
    """A connection the other end refused or reset, or a socket that is not there."""
    for cause in chain:
        if isinstance(cause, ConnectionRefusedError):
            return REFUSED
        if isinstance(cause, FileNotFoundError):
            return NO_SOCKET
        if isinstance(cause, ConnectionResetError):
            return PLAIN_TO_TLS  # a TLS connection's reset comes as an ssl error, seen first
    return None


def certificate_refused(error: ssl.SSLCertVerificationError) -> str:
    why = str(error.verify_message or error.reason or error).rstrip(".")
    if "mismatch" in why:
        return f"TLS: the server's certificate is not for the host asked for ({why})"
    return f"TLS: the server's certificate is not trusted ({why}): check ssl_ca_certs"


def tls_failed(error: ssl.SSLError) -> str:
    code = str(error.reason or "")
    if code in _NO_CLIENT_CERTIFICATE:
        return "TLS: the server requires a client certificate (set ssl_certfile and ssl_keyfile)"
    if code in _NOT_TLS:
        return f"TLS: the server does not speak TLS on this port ({code.lower()}): use redis://"
    if "ALERT" in code:
        alert = code.lower().replace("_", " ")
        return f"TLS: the server refused the connection ({alert}): is the client certificate one it trusts?"
    return f"TLS: {code.lower().replace('_', ' ') if code else error}"


def authentication_failed(error: redis.AuthenticationError) -> str:
    said = str(error)
    if said.lower().startswith("authentication required"):
        return f"authentication required (NOAUTH): give a user and password ({LOGIN})"
    return f"authentication failed (wrong user or password): give the right user and password ({LOGIN})"
