"""What each flavour writes by hand: connections to the servers, the fan-out over the quorum
nodes, server-side waits in flight, and how it sleeps, shields and runs the watchdog (aio/ for
asyncio, sync/ for threads, the same modules and names on both sides)."""
