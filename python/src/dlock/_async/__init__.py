"""The client written once, for asyncio: the manager, the held lock, what they share (backend.py),
the node calls (calls.py) and the driver of attempts (driver.py). python/tools/unasync.py
generates their sync twins into dlock/_sync/ from these files: edit here, never there."""
