"""The asyncio transport (see dlock/_transport/__init__.py); the twin of _transport/sync/."""
