#!/usr/bin/env python3
"""Two builds of the module side by side: DLOCK.ACQUIRE and SET NX PX usec_per_call (INFO
commandstats) on one server per build, 100,000 distinct keys per measurement, 8 rounds with the
order reversed every other round, each on a flushed keyspace. What a change to the module
bought (docs/bench/server.md, "What this milestone's changes bought").

usage: ab_modules.py OLD_MODULE NEW_MODULE   (standard library only; build the old one from a
git worktree of the commit before the change)
"""

import os
import statistics
import sys
import tempfile

from resp_util import command, resp, start_server

KEYS = 100_000
ROUNDS = 8
OWNER = "6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f"


def pipeline(sock, cmds):
    """Sends `cmds` 1,000 at a time and reads every reply; an error reply stops the run."""
    reader = sock.makefile("rb")
    for at in range(0, len(cmds), 1000):
        batch = cmds[at : at + 1000]
        sock.sendall(b"".join(batch))
        for _ in batch:
            line = reader.readline()
            if line.startswith(b"-"):
                raise RuntimeError(line.decode(errors="replace"))
            if line.startswith(b"$") and not line.startswith(b"$-"):
                reader.readline()


def usec_per_call(sock, stat):
    for line in command(sock, "INFO", "commandstats").decode().split("\r\n"):
        if line.startswith(f"cmdstat_{stat}:"):
            return float(line.split("usec_per_call=")[1].split(",")[0])
    raise RuntimeError(f"no {stat} in INFO commandstats")


def main():
    old, new = (os.path.abspath(p) for p in sys.argv[1:3])
    work = {
        "acquire": ("dlock.acquire", [resp("DLOCK.ACQUIRE", f"k:{i}", OWNER, 3600000) for i in range(KEYS)]),
        "set": ("set", [resp("SET", f"k:{i}", OWNER, "NX", "PX", 3600000) for i in range(KEYS)]),
    }
    samples = {}
    with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
        servers = {"old": start_server(old, d1), "new": start_server(new, d2)}
        try:
            for r in range(ROUNDS):
                order = [(b, w) for w in ("acquire", "set") for b in ("old", "new")]
                for build, what in reversed(order) if r % 2 else order:
                    sock = servers[build][1]
                    command(sock, "FLUSHALL", "SYNC")
                    command(sock, "CONFIG", "RESETSTAT")
                    stat, cmds = work[what]
                    pipeline(sock, cmds)
                    samples.setdefault((build, what), []).append(usec_per_call(sock, stat))
        finally:
            for process, *_ in servers.values():
                process.kill()
    m = {k: statistics.median(v) for k, v in samples.items()}
    for (build, what), value in sorted(m.items()):
        print(f"{build} {what}: {value:.3f} usec/call (median of {ROUNDS})")
    acquire, set_ = m["new", "acquire"] / m["old", "acquire"], m["new", "set"] / m["old", "set"]
    print(f"new/old ACQUIRE {acquire:.3f}, new/old SET {set_:.3f}")
    print(
        f"ACQUIRE/SET: old {m['old', 'acquire'] / m['old', 'set']:.3f}, new {m['new', 'acquire'] / m['new', 'set']:.3f}"
    )


if __name__ == "__main__":
    main()
