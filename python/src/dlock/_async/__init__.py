"""The client written once, for asyncio: the manager, the held lock, the node calls (calls.py)
and the driver of attempts (driver.py). python/tools/unasync.py generates their sync twins into
dlock/_sync/ from these files: edit here, never there."""
