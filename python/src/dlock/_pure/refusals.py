"""Refusals in a connection's setup that waiting cannot cure (conformance/README.md, "a refusal
waiting cannot cure ends the wait"), shared by both transports: credentials refused (NOAUTH,
WRONGPASS), permission refused (NOPERM: on DLOCK.RUNID, say) and a database the server does not
have (SELECT: `ERR DB index is out of range`). Connecting again cannot change them, and each try
lands in the server's ACL log, so the call that met one does not connect to that node again
(_async/driver.py), and ends at once once such nodes leave a quorum out of reach."""

from __future__ import annotations

import redis

from ..errors import NodeFailure
from .diagnosis import Explained, causes
from .replies import reason
from .verdicts import DatabaseRefusal, SetupRefusal

#: How a server refuses a database it does not have (Redis, Valkey).
NO_SUCH_DATABASE = "DB index is out of range"


class Final(Explained):
    """Raised by a connection's setup for a refusal waiting cannot cure (see the module)."""


class NoSuchDatabase(Final):
    """The server refused the database asked for."""


def final(error: redis.RedisError, db: int) -> Final | None:
    """What `error`, met while a connection to database `db` was set up, comes to if waiting
    cannot cure it; None for anything else (a server loading, a reset, a timeout)."""
    for cause in causes(error):
        if isinstance(cause, redis.AuthenticationError):
            return Final(reason(error))
        if not isinstance(cause, redis.ResponseError):
            continue
        said = reason(cause)
        if NO_SUCH_DATABASE in said:
            server_said = said if said.startswith("ERR ") else f"ERR {said}"
            return NoSuchDatabase(f"database {db} refused by the server ({server_said})")
        if said.startswith("NOPERM"):
            return Final(reason(error))
    return None


def node_failure(node: str, error: BaseException) -> NodeFailure:
    """A node's failure from the exception a call raised: a SetupRefusal (a DatabaseRefusal)
    when a connection's setup met a refusal waiting cannot cure."""
    said = reason(error)
    for cause in causes(error):
        if isinstance(cause, NoSuchDatabase):
            return DatabaseRefusal(node, str(cause))
        if isinstance(cause, Final):
            return SetupRefusal(node, said)
    return NodeFailure(node, said)
