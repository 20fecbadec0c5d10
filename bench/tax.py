#!/usr/bin/env python3
"""What loading dlock costs traffic that never touches a lock (docs/bench/tax.md,
`make bench-tax`): the same server binary with the module loaded and one lock in the keyspace,
against it without the module and one plain key with the same TTL instead (the same keyspace
state), measured in one run with the order alternated.

- instructions and L1 instruction-cache misses per `SET NX PX` and per `DEL` (callgrind, inside
  Redis's call() and over the whole server, each phase dumped on its own): goals <= 1.01x
  and <= 1.10x; instructions per EXPIRE / PEXPIRE / PERSIST and per key of an RDB load of
  1,000,000 plain keys: <= 1.02x;
- timed (bench/tax_timed.py, which says how): server time of EXPIRE / PEXPIRE / PERSIST on
  200,000 plain keys (INFO commandstats) <= 1.02x; RDB load time <= 1.02x;
  `redis-benchmark -t set,get,incr,lpush,hset -P 16` requests per second >= 0.99x.

usage: tax.py MODULE SERVER [SERVER ...]   (needs valgrind, redis-cli and redis-benchmark)
"""

import os
import re
import subprocess
import sys
import tempfile

import tax_timed
from resp_util import resp
from tax_server import OWNER, RDB_KEYS, Server, make_rdb

CALLS = 25_000
# Server processes counted per side, their counts summed: a process's random hash seed decides
# which names share a bucket of its command table and keyspace, which moves a SET's count by
# 1-2% from one process to the next (measured: 65 instructions per command-table lookup).
PROCESSES = 4


def write_commands(path, name, *args):
    """CALLS commands `name key:i *args`, as RESP, for redis-cli --pipe."""
    with open(path, "wb") as out:
        for i in range(CALLS):
            out.write(resp(name, f"key:{i}", *args))


def numbers(line):
    line = re.sub(r"\([^)]*\)", "", line)  # the percentages
    return [int(n.replace(",", "")) for n in re.findall(r"[\d,]+", line)[:2]]


def callgrind_totals(path, function="call"):
    """Instructions and L1 instruction misses of a callgrind profile: inside Redis's `call()`
    (every command's execution: the command, its keyspace events, module callbacks, replication),
    and in the whole run (timers and the server's cron included, which run by the clock and so
    more often for a run that valgrind happened to make longer)."""
    text = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=yes", "--threshold=100", "--show=Ir,I1mr",
                           path], capture_output=True, text=True, check=True).stdout
    lines = text.splitlines()
    whole = numbers(next(l for l in lines if "PROGRAM TOTALS" in l))
    found = next((l for l in lines if re.search(rf"[?\w]:{function} ", l)), None)
    if found is None:
        raise RuntimeError(f"{path}: no function {function} (a server without symbols?)")
    return (*numbers(found), *whole)


def profile(binary, module, files, tmp, name):
    """Instructions and L1i misses of each of `files` (redis-cli --pipe inputs), run in turn by
    one server under callgrind, its counters dumped before and after each: each phase is counted
    on its own, where subtracting one run from another would add the difference of two runs'
    caches, cron and timers (half an L1i miss per DEL either way, run to run)."""
    out = os.path.join(tmp, f"{name}.callgrind")
    with tempfile.TemporaryDirectory() as directory:
        server = Server(binary, module, directory, callgrind=out)
        try:
            dump(server)  # the start, in out.1
            for path in files:
                server.pipe(path)
                dump(server)
        finally:
            server.stop()
    return [callgrind_totals(f"{out}.{n}") for n in range(2, len(files) + 2)]


def dump(server):
    subprocess.run(["callgrind_control", "--dump", str(server.process.pid)], capture_output=True, check=True)


def ttl_instructions(binary, module, tmp):
    """Instructions inside call() per EXPIRE / PEXPIRE / PERSIST on CALLS plain keys, module and
    one lock / no module (the clock-free twin of the timed EXPIRE-family measure)."""
    fill, ttl = os.path.join(tmp, "fill.resp"), os.path.join(tmp, "ttl.resp")
    write_commands(fill, "SET", "v")
    with open(ttl, "wb") as out:
        for i in range(CALLS):
            out.write(resp("EXPIRE", f"key:{i}", 3600) + resp("PEXPIRE", f"key:{i}", 7_200_000)
                      + resp("PERSIST", f"key:{i}"))
    per = {}
    for side, mod in (("module", module), ("plain", None)):
        per[side] = summed(binary, mod, [fill, ttl], tmp, side)[1][0] / (3 * CALLS * PROCESSES)
    return per["module"], per["plain"]


def summed(binary, module, files, tmp, name):
    """profile()'s phases, summed over PROCESSES server processes."""
    runs = [profile(binary, module, files, tmp, f"{name}-{n}") for n in range(PROCESSES)]
    return [tuple(map(sum, zip(*phases))) for phases in zip(*runs)]


def load_instructions(binary, module, tmp):
    """Instructions per key of loading an RDB of RDB_KEYS plain keys (inclusive of the server's
    loadDataFromDisk), module and one lock / no module (the clock-free twin of the timed load)."""
    per = {}
    for side, with_lock in (("module", True), ("plain", False)):
        with tempfile.TemporaryDirectory() as directory:
            make_rdb(binary, module, directory, with_lock, keys=RDB_KEYS)
            out = os.path.join(tmp, f"{side}-load.callgrind")
            server = Server(binary, module if with_lock else None, directory, callgrind=out,
                            rdb="dump.rdb")
            server.stop()
            per[side] = callgrind_totals(out, "loadDataFromDisk")[0] / RDB_KEYS
    return per["module"], per["plain"]


def instructions(binary, module, tmp):
    """Per call, for SET NX PX and DEL: {(op, side): (instructions, L1i misses inside call(),
    the same over the whole server)}."""
    sets, dels = os.path.join(tmp, "set.resp"), os.path.join(tmp, "del.resp")
    write_commands(sets, "SET", OWNER, "NX", "PX", 3_600_000)
    write_commands(dels, "DEL")
    results = {}
    for side, mod in (("module", module), ("plain", None)):
        set_phase, del_phase = summed(binary, mod, [sets, dels], tmp, side)
        results[("SET NX PX", side)] = tuple(x / (CALLS * PROCESSES) for x in set_phase)
        results[("DEL", side)] = tuple(x / (CALLS * PROCESSES) for x in del_phase)
    return results


def version(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    name = "Valkey" if "alkey" in out else "Redis"
    found = re.search(r"v=(\S+)", out)
    return f"{name} {found.group(1) if found else '?'}"


def report(binary, module):
    print(f"\n### {version(binary)} ({binary})\n")
    print("| measure | module loaded, one lock / no module | goal | |")
    print("|---|---|---|---|")
    verdict = lambda ok: "met" if ok else "**missed**"
    row = lambda measure, value, goal, met: print(f"| {measure} | {value} | {goal} | {met} |", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        calls = instructions(binary, module, tmp)
        for op in ("SET NX PX", "DEL"):
            m, p = calls[(op, "module")], calls[(op, "plain")]
            for at, where in ((0, "the command (inside call())"), (2, "the whole server")):
                (mi, m1), (pi, p1) = m[at:at + 2], p[at:at + 2]
                row(f"{op} instructions per call, {where}", f"{mi / pi:.3f}x ({mi:.0f} / {pi:.0f})", "<= 1.01x", verdict(mi / pi <= 1.01))
                row(f"{op} L1i misses per call, {where}", f"{m1 / p1:.3f}x ({m1:.2f} / {p1:.2f})", "<= 1.10x", verdict(m1 / p1 <= 1.10))
        m, p = ttl_instructions(binary, module, tmp)
        row(f"EXPIRE / PEXPIRE / PERSIST instructions per call (inside call()), {CALLS:,} plain keys", f"{m / p:.3f}x ({m:.0f} / {p:.0f})", "<= 1.02x", verdict(m / p <= 1.02))
        m, p = load_instructions(binary, module, tmp)
        row(f"RDB load instructions per key, {RDB_KEYS:,} plain keys", f"{m / p:.3f}x ({m:.0f} / {p:.0f})", "<= 1.02x", verdict(m / p <= 1.02))
    tax_timed.report(binary, module, row)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    module = os.path.realpath(sys.argv[1])
    print(f"Callgrind counts over {CALLS:,} calls in each of {PROCESSES} server processes; timed ratios are totals over alternated pairs, +- 1.96 standard errors.")
    for binary in sys.argv[2:]:
        report(binary, module)


if __name__ == "__main__":
    main()
