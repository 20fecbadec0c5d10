"""The asyncio twin of dlock: the same API, awaitable.

from dlock.asyncio import LockManager
locks = LockManager(["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"])
async with locks.lock("orders:42", ttl=10.0, wait=5.0) as lock:
    await storage.write(lock.token, data)
"""

from .._admin import LockInfo, NodeStatus
from ..errors import DlockError, LockContended, LockLost, LockTimeout, NodeFailure, NoQuorum, ValidityExpired
from .lock import Lock
from .manager import LockManager, PendingLock

__all__ = [
    "DlockError",
    "Lock",
    "LockContended",
    "LockInfo",
    "LockLost",
    "LockManager",
    "LockTimeout",
    "NoQuorum",
    "NodeFailure",
    "NodeStatus",
    "PendingLock",
    "ValidityExpired",
]
