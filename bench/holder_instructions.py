#!/usr/bin/env python3
"""Instructions per command on one resource of N holders (callgrind: each command handler's
inclusive count, the module's code and the Redis API work it calls), at two sizes, so that
"O(log n)" is a count, not a timing: machines vary, instruction counts do not (repeatable to
about 1%).

For each size, a server under callgrind gets a semaphore of LIMIT 10000 filled with N holders of
256-byte owners; callgrind's counters are zeroed after the fill, then OPS renewals (ACQUIRE by a
holder), EXTENDs and FENCEs on holders picked at random are counted (one dump), then OPS pairs of
a RELEASE and an ACQUIRE by a new owner (another dump). Per call: each command's inclusive
instructions (`callgrind_annotate --inclusive`) over its calls.

usage: holder_instructions.py MODULE_PATH [SIZE ...]   (default sizes 100 10000; needs valgrind)
"""

import glob
import os
import random
import subprocess
import sys
import tempfile
import time

from resp_util import free_port, resp
from scale_holders import LIMIT, owner
from scale_resp import Conn

OPS = 2_000
HANDLERS = {
    "acquire": "dlock::commands::acquire::acquire",
    "extend": "dlock::commands::holders::extend",
    "fence": "dlock::commands::holders::fence",
    "release": "dlock::commands::holders::release",
}


def inclusive(path):
    """{handler: inclusive instructions} of one callgrind dump (the handlers it ran)."""
    text = subprocess.run(
        ["callgrind_annotate", "--auto=no", "--inclusive=yes", "--show=Ir", path],
        capture_output=True, text=True, check=True,
    ).stdout
    out = {}
    for name, symbol in HANDLERS.items():
        for line in text.splitlines():
            if f":{symbol} [" in line:
                out[name] = int(line.split()[0].replace(",", ""))
                break
    return out


def measure(module, size, directory):
    port = free_port()
    out = os.path.join(directory, f"cg.{size}")
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "redis-server", "--port", str(port),
         "--save", "", "--appendonly", "no", "--loadmodule", module],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    for _ in range(300):
        try:
            conn = Conn(port)
            break
        except OSError:
            time.sleep(0.1)
    else:
        raise RuntimeError("redis-server under valgrind did not start")
    tokens = []
    for low in range(0, size, 500):
        high = min(size, low + 500)
        payload = b"".join(resp("DLOCK.ACQUIRE", "pool", owner(i), 600_000, "LIMIT", LIMIT) for i in range(low, high))
        tokens += conn.pipeline(payload, high - low)
    control = ["callgrind_control"]
    subprocess.run([*control, "-z", str(server.pid)], check=True, capture_output=True)
    rng = random.Random(7)
    for _ in range(OPS):
        i = rng.randrange(size)
        conn.call("DLOCK.ACQUIRE", "pool", owner(i), 600_000, "LIMIT", LIMIT)
        conn.call("DLOCK.EXTEND", "pool", owner(i), 600_000)
        conn.call("DLOCK.FENCE", "pool", owner(i), tokens[i])
    subprocess.run([*control, "-d", str(server.pid)], check=True, capture_output=True)
    holding, extra = list(range(size)), size
    for _ in range(OPS):
        i = rng.randrange(size)
        if conn.call("DLOCK.RELEASE", "pool", owner(holding[i])) != 1:
            raise RuntimeError("a holder was not released")
        conn.call("DLOCK.ACQUIRE", "pool", owner(extra), 600_000, "LIMIT", LIMIT)
        holding[i], extra = extra, extra + 1
    try:
        conn.call("SHUTDOWN", "NOSAVE")
    except ConnectionError:
        pass
    server.wait()
    dumps = sorted(glob.glob(out + "*"), key=os.path.getmtime)
    first, second = inclusive(dumps[-2]), inclusive(dumps[-1])
    return {
        "renew": first["acquire"] / OPS,
        "extend": first["extend"] / OPS,
        "fence": first["fence"] / OPS,
        "release": second["release"] / OPS,
        "acquire": second["acquire"] / OPS,
    }


def main():
    module = os.path.abspath(sys.argv[1])
    sizes = [int(s) for s in sys.argv[2:]] or [100, 10_000]
    with tempfile.TemporaryDirectory() as directory:
        rows = {size: measure(module, size, directory) for size in sizes}
    commands = list(next(iter(rows.values())))
    print(f"\nInstructions per call (the handler, inclusive; {OPS} calls each, 256-byte owners):\n")
    print("| holders | " + " | ".join(commands) + " |")
    print("|---|" + "---|" * len(commands))
    for size, row in rows.items():
        print(f"| {size:,} | " + " | ".join(f"{row[c]:,.0f}" for c in commands) + " |")
    low, high = rows[sizes[0]], rows[sizes[-1]]
    ratios = ", ".join(f"{c} {high[c] / low[c]:.2f}x" for c in commands)
    print(f"\n{sizes[-1]:,} holders against {sizes[0]:,}: {ratios}")


if __name__ == "__main__":
    main()
