# unasync: asyncio only
"""The asyncio twin of dlock: the same API, awaitable.

from dlock.asyncio import LockManager
locks = LockManager(["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"])
async with locks.lock("orders:42", ttl=10.0, wait=5.0) as lock:
    await storage.write(await lock.token(), data)
"""
# unasync: sync only
# """dlock: distributed locks with fencing tokens across Redis masters running the dlock module.
#
#     from dlock import LockManager
#     locks = LockManager(["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"])
#     with locks.lock("orders:42", ttl=10.0, wait=5.0) as lock:
#         storage.write(lock.token(), data)
#
# The asyncio twin is `dlock.asyncio.LockManager`.
# """
# unasync: end

from .._async.election import Leadership
from .._async.election_watch import Observer
from .._async.lock import CrossSlotSet, Lock
from .._async.manager import LockManager, PendingLock
from .._pure.admin import Holder, LockInfo, NodeStatus
from .._pure.election import Leader
from .._pure.observe import HeldLock, NodeTop, QueuedLock, TopHolder
from ..errors import (
    ArgumentRefused,
    DatabaseRefused,
    DlockError,
    KindRefused,
    LockContended,
    LockLost,
    LockTimeout,
    NodeFailure,
    NoQuorum,
    StaleToken,
    UnitWarning,
    ValidityExpired,
    WrongKindError,
)

# unasync: sync only
# from importlib.metadata import version
#
# from ._pure.options import WaitMode
#
# #: The package's version: the one version of the module and every client (Cargo.toml).
# __version__ = version("dlock-client")
# unasync: end

__all__ = [
    "ArgumentRefused",
    "CrossSlotSet",
    "DatabaseRefused",
    "DlockError",
    "HeldLock",
    "Holder",
    "KindRefused",
    "Leader",
    "Leadership",
    "Lock",
    "LockContended",
    "LockInfo",
    "LockLost",
    "LockManager",
    "LockTimeout",
    "NoQuorum",
    "NodeFailure",
    "NodeStatus",
    "NodeTop",
    "Observer",
    # unasync: asyncio only
    "PendingLock",
    # unasync: end
    "QueuedLock",
    "StaleToken",
    "TopHolder",
    "UnitWarning",
    "ValidityExpired",
    # unasync: sync only
    # "WaitMode",
    # unasync: end
    "WrongKindError",
    # unasync: sync only
    # "__version__",
    # unasync: end
]
