# Generated from src/dlock/asyncio/__init__.py by python/tools/unasync.py: do not edit. Edit that file,
# then run `python tools/unasync.py` in python/ (`make python-test` checks it is up to date).
"""dlock: distributed locks with fencing tokens across Redis masters running the dlock module.

    from dlock import LockManager
    locks = LockManager(["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"])
    with locks.lock("orders:42", ttl=10.0, wait=5.0) as lock:
        storage.write(lock.token(), data)

The asyncio twin is `dlock.asyncio.LockManager`.
"""

from importlib.metadata import version

from ._pure.admin import Holder, LockInfo, NodeStatus
from ._pure.election import Leader
from ._pure.observe import HeldLock, NodeTop, QueuedLock, TopHolder
from ._pure.options import WaitMode
from ._sync.election import Leadership
from ._sync.election_watch import Observer
from ._sync.lock import CrossSlotSet, Lock
from ._sync.manager import LockManager
from .errors import (
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

#: The package's version: the one version of the module and every client (Cargo.toml).
__version__ = version("dlock-client")

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
    "QueuedLock",
    "StaleToken",
    "TopHolder",
    "UnitWarning",
    "ValidityExpired",
    "WaitMode",
    "WrongKindError",
    "__version__",
]
